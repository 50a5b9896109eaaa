package loader_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/zktest"
	"github.com/tributary/tributary/loader"
)

// commitsOf reads the commits a child process logged.
func commitsOf(t *testing.T, file string) []loader.CommitInfo {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []loader.CommitInfo
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var ci loader.CommitInfo
		if err := json.Unmarshal([]byte(line), &ci); err != nil {
			t.Fatal(err)
		}
		out = append(out, ci)
	}
	return out
}

// TestScaleOut runs two loader processes of one job through ZooKeeper:
// they split the partitions (each loads some, no partition's records are
// loaded by both) and every record lands once. Then, on a new job, one of
// the two is SIGKILLed in the middle of its partitions: the survivor takes
// them over once the dead session expires, and a next run finds nothing
// left; every record lands once.
func TestScaleOut(t *testing.T) {
	zk := testenv.ZooKeeper(t)
	c := newCluster(t)
	d := dataset{topic: "scaled", n: 6000, partitions: 6, start: hourStart(), span: 3 * time.Hour}
	c.CreateTopic(t, d.topic, d.partitions)
	c.produceDataset(t, d)
	for _, fc := range fileSystems {
		t.Run(fc.name, func(t *testing.T) {
			t.Run("split", func(t *testing.T) {
				fsys, base, uri := fc.open(t)
				cfg := baseConfig(c, "split", d.topic, uri)
				cfg.ZooKeeperConnect = zktest.Chroot(t, zk, "loader")
				cfg.ScaleMembers, cfg.ScaleWait, cfg.ZKSessionTimeout = 2, time.Minute, 4*time.Second
				cfg.CommitRecords = 200
				dir := t.TempDir()
				var children []*child
				for _, name := range []string{"a", "b"} {
					cfg.Instance = name
					children = append(children, startChild(t, cfg, childCommitsEnv+"="+filepath.Join(dir, name)))
				}
				for _, ch := range children {
					if err := ch.wait(t); err != nil {
						t.Fatalf("loader: %v\n%s", err, ch.output())
					}
				}
				owner := map[string]string{}
				for _, name := range []string{"a", "b"} {
					loaded := 0
					for _, ci := range commitsOf(t, filepath.Join(dir, name)) {
						if ci.Records == 0 {
							continue
						}
						tp := fmt.Sprintf("%s/%d", ci.Topic, ci.Partition)
						if o, ok := owner[tp]; ok && o != name {
							t.Errorf("partition %s loaded by both %s and %s", tp, o, name)
						}
						if owner[tp] == "" {
							loaded++
						}
						owner[tp] = name
					}
					if loaded == 0 {
						t.Errorf("process %s loaded no partition", name)
					}
					t.Logf("process %s loaded %d partitions", name, loaded)
				}
				checkExactlyOnce(t, d, readAll(t, fsys, base))
			})
			t.Run("kill", func(t *testing.T) {
				fsys, base, uri := fc.open(t)
				cfg := baseConfig(c, "kill", d.topic, uri)
				cfg.ZooKeeperConnect = zktest.Chroot(t, zk, "loader")
				cfg.ScaleMembers, cfg.ScaleWait, cfg.ZKSessionTimeout = 2, time.Minute, 4*time.Second
				cfg.CommitRecords = 200
				cfg.Instance = "survivor"
				a := startChild(t, cfg)
				cfg.Instance = "victim"
				b := startChild(t, cfg, loader.CrashEnv+"=4:3") // SIGKILL at its third commit point
				if err := b.wait(t); !killedBySIGKILL(err) {
					t.Fatalf("victim ended with %v, want SIGKILL:\n%s", err, b.output())
				}
				if err := a.wait(t); err != nil {
					t.Fatalf("survivor: %v\n%s", err, a.output())
				}
				cfg.Instance, cfg.ScaleMembers = "next", 1
				sum := runChild(t, cfg)
				if sum.Records != 0 {
					t.Logf("next run loaded %d records", sum.Records)
				}
				checkExactlyOnce(t, d, readAll(t, fsys, base))
			})
		})
	}
}
