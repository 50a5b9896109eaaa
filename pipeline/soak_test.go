package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testenv"
	"github.com/tributary/tributary/internal/testproc"
	"github.com/tributary/tributary/internal/zktest"
)

// Soak knobs (scripts/soak.sh sets them for `make soak`).
const (
	envSoakDuration = "TRIBUTARY_SOAK_DURATION" // how long the producers run; default 2m
	envSoakRate     = "TRIBUTARY_SOAK_RATE"     // page views/s per datacenter; default 250
	envSoakEnsemble = "TRIBUTARY_SOAK_ENSEMBLE" // "1": run on the 3-node ensemble and kill a member
	envSoakEvery    = "TRIBUTARY_SOAK_FAULT_EVERY"
)

func envDuration(t *testing.T, key string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration like 1h", key, v)
	}
	return d
}

// TestSoak runs the pipeline on real ZooKeeper (a chroot per cluster) and
// real HDFS with steady traffic while faults are injected on a schedule:
// the mirror, the loader and the audit service restarted, a broker of
// every cluster stopped and started again, and, in longer runs, the
// analytics cluster unreachable for 30 s and (TRIBUTARY_SOAK_ENSEMBLE=1) a
// ZooKeeper ensemble member killed and restarted. At the end every
// produced record must be in the HDFS files exactly once, read back from
// them, and every closed audit window complete at every tier. The default
// run is about 3 minutes; `make soak SOAK_DURATION=1h` runs the long one.
func TestSoak(t *testing.T) {
	t.Parallel()
	duration := envDuration(t, envSoakDuration, 2*time.Minute)
	rate := 250.0
	if v := os.Getenv(envSoakRate); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 {
			t.Fatalf("%s=%q: want a positive rate", envSoakRate, v)
		}
		rate = r
	}
	every := envDuration(t, envSoakEvery, 12*time.Second)
	long := duration >= 10*time.Minute

	var zk string
	var faults []Fault
	if os.Getenv(envSoakEnsemble) == "1" {
		addrs, _ := testenv.ZooKeeperEnsemble(t)
		zk = zktest.Chroot(t, strings.Join(addrs, ","), "pipeline-soak")
	} else {
		zk = zktest.Chroot(t, testenv.ZooKeeper(t), "pipeline-soak")
	}
	hdfs := testenv.HDFS(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	hdfsPath := "/tributary-test/pipeline-soak-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if fsys, base, err := filesys.Open(ctx, "hdfs://"+hdfs+hdfsPath); err == nil {
			_ = fsys.RemoveAll(base)
			_ = fsys.Close()
		}
	})

	faults = append(faults,
		RestartPartFault("mirror", 2*time.Second),
		BrokerFault("dc1", 1, 5*time.Second),
		RestartPartFault("loader", 2*time.Second),
		BrokerFault(AnalyticsCluster, 2, 5*time.Second),
		RestartPartFault("audit", 2*time.Second),
		BrokerFault("dc2", 2, 5*time.Second),
	)
	if long {
		faults = append(faults, ClusterOutageFault(AnalyticsCluster, 30*time.Second))
	}
	if os.Getenv(envSoakEnsemble) == "1" {
		faults = append(faults, FuncFault("kill ZooKeeper member 2 (back after 10s)", func(ctx context.Context) error {
			testenv.ControlEnsemble(t, "kill", 2)
			sleep(ctx, 10*time.Second)
			testenv.ControlEnsemble(t, "start", 2)
			return nil
		}))
	}

	logs := &testproc.SyncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), duration+6*time.Minute)
	defer cancel()
	p, err := Start(ctx, Config{
		Dir: t.TempDir(), ZooKeeper: zk, HDFS: hdfs, HDFSPath: hdfsPath, Rate: rate,
		AuditWindow: 10 * time.Second, AuditInterval: time.Second, LoadInterval: 2 * time.Second,
		Logger: testLogger(t, logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	buf := &testproc.SyncBuffer{}
	var out io.Writer = buf
	if os.Getenv(envSoakDuration) != "" {
		out = io.MultiWriter(os.Stdout, buf) // a long soak shows its progress as it goes
	}
	p.PrintBanner(out)
	log := &FaultLog{}
	res, err := p.RunFor(ctx, DemoOptions{Duration: duration, Drain: 4 * time.Minute, Progress: 30 * time.Second,
		During: Schedule(every, faults, log, out)}, out)
	if res != nil {
		res.Print(out, p)
		PrintSoakTable(out, res, log, duration)
	}
	if os.Getenv(envSoakDuration) == "" {
		t.Logf("soak output:\n%s", buf)
	}
	if err != nil {
		t.Fatal(err)
	}
	if log.Count() < len(faults) && !long {
		t.Errorf("only %d faults injected, want every kind (%d) at least once", log.Count(), len(faults))
	}
	if res.Loaded != res.Produced || res.Complete != res.Windows || res.Windows == 0 {
		t.Fatalf("%s", res.Summary())
	}
}
