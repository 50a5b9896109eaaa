package compact

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testenv"
	"github.com/tributary/tributary/internal/testproc"
	"github.com/tributary/tributary/jobs/hours"
)

func TestMain(m *testing.M) { os.Exit(testproc.Main(m)) }

// TestCrashAtEveryStepLocal and ...HDFS SIGKILL `tributary jobs compact`
// at each of its file-system steps in turn (EnvCrashAt), check that every
// hour then shows readers either exactly its original Avro files or a
// complete set of Parquet files, run compaction again to completion (which
// recovers first), and compare every Parquet view with the Avro rows
// through pyarrow and fastavro.
func TestCrashAtEveryStepLocal(t *testing.T) {
	crashAtEveryStep(t, filesys.Local(), t.TempDir(), func(base string) []string { return []string{"--base", base} }, 3, "6KiB")
}

func TestCrashAtEveryStepHDFS(t *testing.T) {
	fsys, base := openHDFS(t)
	addr := strings.TrimPrefix(os.Getenv("TRIBUTARY_TEST_HDFS"), "hdfs://")
	// One Avro file and one Parquet file per hour keeps the number of
	// steps (each a child process talking to the NameNode) small.
	crashAtEveryStep(t, fsys, base, func(b string) []string { return []string{"--base", "hdfs://" + addr + b} }, 1, "1MiB")
}

// TestCrashAtEveryStepKerberos is TestCrashAtEveryStepHDFS on the
// Kerberized clusters, the command logging in through --hdfs-config.
func TestCrashAtEveryStepKerberos(t *testing.T) {
	for _, protection := range testenv.KerberizedHDFSProtections {
		t.Run(protection, func(t *testing.T) {
			fsys, base, addr, config := openKerberizedHDFS(t, protection)
			crashAtEveryStep(t, fsys, base, func(b string) []string {
				return []string{"--base", "hdfs://" + addr + b, "--hdfs-config", config}
			}, 1, "1MiB")
		})
	}
}

// crashAtEveryStep runs the compaction of root's hours in fsys with the
// arguments baseArgs gives for a base directory (--base and what else
// reaches it).
func crashAtEveryStep(t *testing.T, fsys filesys.FS, root string, baseArgs func(string) []string, files int, target string) {
	bin := testproc.Binary(t)
	local := t.TempDir()
	// The originals, written once and copied out for the comparison.
	origBase := path.Join(root, "orig")
	origDirs := writeHours(t, fsys, origBase, "pv", hour0, 3, files, 40)
	var orig [][]string
	var origNames [][]string
	for i, d := range origDirs {
		names, _ := hours.DataFiles(fsys, d)
		origNames = append(origNames, names)
		orig = append(orig, copyOut(t, fsys, d, names, filepath.Join(local, "orig", fmt.Sprint(i))))
	}
	closed := hour0.Add(3*time.Hour + time.Minute).Format(time.RFC3339)
	run := func(base string, crashAt int) (killed bool, out string) {
		args := append([]string{"jobs", "compact"}, baseArgs(base)...)
		cmd := exec.Command(bin, append(args, "--closed-through", closed,
			"--delay", "1m", "--target-file-size", target, "--log-level", "warn")...)
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", EnvCrashAt, crashAt))
		b, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				return true, string(b)
			}
		}
		if err != nil {
			t.Fatalf("compact (crash at %d): %v\n%s", crashAt, err, b)
		}
		return false, string(b)
	}

	checks := map[string]check{}
	crashes := 0
	for n := 1; n < 500; n++ {
		base := path.Join(root, fmt.Sprintf("crash%03d", n))
		dirs := writeHours(t, fsys, base, "pv", hour0, 3, files, 40)
		killed, out := run(base, n)
		if !killed {
			t.Logf("compaction takes %d steps; crashed at each of 1..%d", n-1, n-1)
			break
		}
		crashes++
		view := func(stage string) {
			for i, d := range dirs {
				names, err := hours.DataFiles(fsys, d)
				if err != nil {
					t.Fatalf("crash at %d, %s, hour %d: %v", n, stage, i, err)
				}
				if strings.Join(names, ",") == strings.Join(origNames[i], ",") {
					continue // the Avro files, untouched
				}
				for _, nm := range names {
					if !strings.HasSuffix(nm, ".parquet") {
						t.Fatalf("crash at %d, %s, hour %d: readers see a mix: %v", n, stage, i, names)
					}
				}
				if len(names) == 0 {
					t.Fatalf("crash at %d, %s, hour %d: readers see no data", n, stage, i)
				}
				key := fmt.Sprintf("crash%03d-%s-hour%d", n, stage, i)
				checks[key] = check{Avro: orig[i], Parquet: copyOut(t, fsys, d, names, filepath.Join(local, key))}
			}
		}
		view("crashed")
		if killed, out2 := run(base, 0); killed {
			t.Fatalf("recovery run killed: %s", out2)
		}
		view("recovered")
		for i, d := range dirs {
			list, _ := fsys.ReadDir(d)
			var all []string
			for _, fi := range list {
				all = append(all, fi.Name())
			}
			sort.Strings(all)
			for _, nm := range all {
				if strings.HasSuffix(nm, ".avro") || nm == hours.TmpDir || nm == hours.MarkerTmp {
					t.Fatalf("crash at %d: after recovery hour %d still has %v (output %s)", n, i, all, out)
				}
			}
		}
		_ = fsys.RemoveAll(base)
	}
	if crashes < 6*3 {
		t.Fatalf("only %d crash points", crashes)
	}
	res := comparePython(t, checks)
	t.Logf("%d crash points, %d Parquet views compared with the Avro rows", crashes, len(res))
}
