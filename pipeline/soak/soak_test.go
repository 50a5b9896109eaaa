package soak

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// soakParallel is how many soaks run at once unless -test.parallel is
// given: all three, not GOMAXPROCS (a soak waits more than it computes).
const soakParallel = 3

func TestMain(m *testing.M) { os.Exit(testproc.MainParallel(m, soakParallel)) }

// envSeed replays a failed run's schedule: the seed is in its output.
const envSeed = "SOAK_SEED"

func soakConfig(t *testing.T) Config {
	t.Helper()
	var seed int64
	if v := os.Getenv(envSeed); v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: want a number", envSeed, v)
		}
	}
	return Config{
		Executable: testproc.Binary(t),
		Repo:       testenv.RepoRoot(t),
		Python:     testenv.Python(t),
		Dir:        t.TempDir(),
		Rate:       50,
		Seed:       seed,
		Drain:      3 * time.Minute,
		Out:        testenv.LogWriter(t),
		Logger:     testenv.Logger(t, 0),
	}
}

// TestSoakEveryFault is the short soak of make test: every part its own
// process (real ZooKeeper ensemble, real HDFS with 2 DataNodes, 9
// brokers, registries, audit, mirrors, loaders, schedulers, load
// generators), every fault kind at least once, and then every
// acknowledged record in analytics and in the files exactly once (read
// with fastavro) and every closed audit window complete.
//
// The three soaks run side by side (t.Parallel): a soak mostly waits (for
// its faults' gaps and outages, its audit windows to close), and each
// has ports, ZooKeeper and HDFS of its own.
func TestSoakEveryFault(t *testing.T) {
	t.Parallel()
	cfg := soakConfig(t)
	cfg.Duration = 30 * time.Second // goes on until every kind happened
	// The soaks fit make test's 25-minute package timeout side by side;
	// each takes 2 to 4 minutes on 2 busy cores, longer beside the others.
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkEveryFault(t, cfg, res)
}

// TestSoakSecure is TestSoakEveryFault secured (Config.Secure): SASL_SSL
// and ACLs on every cluster with each tier its own user, ZooKeeper ACLs,
// HTTPS with basic authentication, a Kerberized HDFS; every fault kind at
// least once, and then nothing lost or doubled.
func TestSoakSecure(t *testing.T) {
	t.Parallel()
	cfg := soakConfig(t)
	cfg.Duration = 30 * time.Second // goes on until every kind happened
	cfg.Secure = true
	// The Kerberized HDFS and the TLS handshakes make its start-up slower:
	// 4.5 to 5.5 minutes on 2 cores under a load average of 40 to 50, the
	// run then 3.5 to 5.5 minutes more.
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkEveryFault(t, cfg, res)
}

// TestSoakCatchesSkippedDedup injects a bug, each loader keeping the first
// mirror duplicate it recognises, and kills mirrors so that there are
// duplicates: the soak must fail, naming the audit window and the topic
// that have a record too many and the record loaded twice.
func TestSoakCatchesSkippedDedup(t *testing.T) {
	t.Parallel()
	cfg := soakConfig(t)
	cfg.Duration = 30 * time.Second
	cfg.SkipDedupOnce = true
	cfg.NoScheduler = true
	cfg.Faults = []string{KillMirror}
	cfg.Drain = 2 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Line())
	if res.MirrorDuplicates == 0 {
		t.Fatalf("no mirror duplicates after %d mirror kills: the injected bug had nothing to act on", res.FaultKind[KillMirror])
	}
	if res.OK() {
		t.Fatalf("the soak passed with the loaders' dedup skipped: %s", res.Line())
	}
	if res.LoadedTwice == 0 {
		t.Errorf("no record loaded twice reported: %v", res.Problems)
	}
	var window, twice bool
	for _, p := range res.Problems {
		window = window || (strings.HasPrefix(p, "audit: incomplete window ") && strings.Contains(p, " of "+Topic+":"))
		twice = twice || strings.Contains(p, "loaded twice")
	}
	if !window || !twice {
		t.Errorf("problems do not name the window and topic (%v) and the record loaded twice (%v): %s", window, twice, strings.Join(res.Problems, "\n"))
	}
}

// checkEveryFault fails t unless res had every fault kind and lost and
// doubled nothing.
func checkEveryFault(t *testing.T, cfg Config, res *Result) {
	t.Helper()
	for _, k := range FaultKinds {
		if res.FaultKind[k] == 0 {
			t.Errorf("fault kind %q never injected", k)
		}
	}
	// Every problem fails the run, a mirror-tier shortfall too: the mirror
	// commits an offset only after the counts before it are published.
	if len(res.Problems) > 0 || !res.OK() || res.Produced != res.Mirrored || res.Mirrored != res.Loaded ||
		res.LoadedTwice != 0 || res.Windows == 0 || res.Complete != res.Windows {
		t.Fatalf("%s\nproblems: %s", res.Line(), strings.Join(res.Problems, "\n"))
	}
	if res.Produced < int64(cfg.Rate*float64(len(Datacenters))*cfg.Duration.Seconds())/2 {
		t.Errorf("only %d records produced in %v", res.Produced, res.Producing)
	}
	t.Log(res.Line())
}
