package soak

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"
)

// Defaults.
const (
	DefaultDuration = 10 * time.Minute
	DefaultRate     = 200 // page views per second per datacenter
	// Partitions of the page-view topic on every cluster.
	DefaultPartitions = 6
)

// ErrInvalidConfig marks a configuration error.
var ErrInvalidConfig = errors.New("soak: invalid configuration")

// Config configures a soak. Zero values mean the defaults.
type Config struct {
	// Executable is the tributary binary every part runs. Required.
	Executable string
	// Repo is the repository checkout whose scripts/zk.sh and
	// testing/hdfs/ start ZooKeeper and HDFS. Required.
	Repo string
	// Dir holds every process's data and log. Required.
	Dir string
	// Python is an interpreter with fastavro, the independent reader of the
	// loaded files. Required.
	Python string

	// Duration is how long the producers run; DefaultDuration.
	Duration time.Duration
	// Rate is page views per second per datacenter; DefaultRate.
	Rate float64
	// Seed makes the fault schedule; 0 picks one (printed).
	Seed int64
	// Drain bounds the wait, after the producers stop, for everything to
	// be mirrored, loaded and audited; default 5 minutes.
	Drain time.Duration
	// SkipDedupOnce injects a bug: the loader processes keep the first
	// mirror duplicate they see (loader.EnvSkipDedupOnce). The soak must
	// then fail.
	SkipDedupOnce bool
	// Secure runs every part secured (secure.go): SASL_SSL and ACLs on
	// every cluster, ZooKeeper ACLs, HTTPS with basic authentication,
	// Kerberized HDFS.
	Secure bool
	// NoScheduler leaves out the two job schedulers (whose loader job,
	// the loader processes' job, runs `tributary loader run`) and their
	// fault.
	NoScheduler bool

	// Faults restricts the schedule to these kinds (KillMirror, ...);
	// empty: every kind.
	Faults []string

	// Out receives the progress, the summary table and the final line.
	Out io.Writer
	// Logger receives the harness's own warnings; nil discards.
	Logger *slog.Logger
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Executable == "":
		return fmt.Errorf("%w: Executable is required", ErrInvalidConfig)
	case c.Repo == "":
		return fmt.Errorf("%w: Repo is required", ErrInvalidConfig)
	case c.Dir == "":
		return fmt.Errorf("%w: Dir is required", ErrInvalidConfig)
	case c.Python == "":
		return fmt.Errorf("%w: Python (with fastavro) is required", ErrInvalidConfig)
	case c.Duration < 0:
		return fmt.Errorf("%w: Duration %v must be positive", ErrInvalidConfig, c.Duration)
	case c.Rate < 0:
		return fmt.Errorf("%w: Rate %v must be positive", ErrInvalidConfig, c.Rate)
	}
	for _, k := range c.Faults {
		if !slices.Contains(FaultKinds, k) || (k == KillScheduler && c.NoScheduler) {
			return fmt.Errorf("%w: no fault kind %q (want one of %q)", ErrInvalidConfig, k, FaultKinds)
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	if c.Drain == 0 {
		c.Drain = 5 * time.Minute
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// timing is the schedule's scale: a short run keeps every fault kind but
// shortens the gaps and the outages, so that it still has each at least
// once.
type timing struct {
	gapMin, gapMax   time.Duration // between faults
	gapFromOnset     bool          // the gap runs from a fault's onset, not its repair
	down             time.Duration // a killed process stays down this long
	cutMin, cutMax   time.Duration // a link cut
	slowMin, slowMax time.Duration // then the slow link
	auditWindow      time.Duration
	loadEvery        time.Duration // the scheduled loader job
	check            time.Duration // continuous checks
	sampleEvery      time.Duration // /proc samples
	session          time.Duration // ZooKeeper session timeout of brokers and clients
}

func timingFor(d time.Duration) timing {
	t := timing{
		gapMin: 30 * time.Second, gapMax: 60 * time.Second, gapFromOnset: true, down: 10 * time.Second,
		cutMin: 30 * time.Second, cutMax: 90 * time.Second, slowMin: 2 * time.Minute, slowMax: 4 * time.Minute,
		auditWindow: 30 * time.Second, loadEvery: 30 * time.Second, check: time.Minute, sampleEvery: time.Minute,
		session: 6 * time.Second,
	}
	if d < 10*time.Minute {
		t.gapMin, t.gapMax, t.gapFromOnset, t.down = 3*time.Second, 6*time.Second, false, 3*time.Second
		t.cutMin, t.cutMax, t.slowMin, t.slowMax = 8*time.Second, 12*time.Second, 15*time.Second, 25*time.Second
		t.auditWindow, t.loadEvery, t.check, t.sampleEvery = 10*time.Second, 10*time.Second, 30*time.Second, 20*time.Second
	}
	return t
}
