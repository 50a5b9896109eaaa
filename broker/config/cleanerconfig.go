package config

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/partlog"
)

// Values of cleanup.policy, normalized (frozen by Kafka).
const (
	PolicyDelete        = "delete"
	PolicyCompact       = "compact"
	PolicyCompactDelete = "compact,delete"
)

// Defaults of the log cleaner, as in Kafka.
const (
	DefaultCleanerThreads          = 1
	DefaultCleanerDedupeBufferSize = 128 << 20
	DefaultCleanerBackoff          = 15 * time.Second
)

// Cleaner is the log cleaner's broker configuration: log.cleaner.*
// and log.cleanup.policy, whose topic-level keys override the last five.
// Zero values mean Kafka's defaults.
type Cleaner struct {
	// Disable is log.cleaner.enable=false: no log is compacted.
	Disable bool
	// Threads is log.cleaner.threads.
	Threads int
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size: bytes of offset
	// map shared by the threads; a log with more keys in its dirty section
	// is cleaned in several passes.
	DedupeBufferSize int64
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second; zero or
	// negative means unthrottled.
	IOMaxBytesPerSecond float64
	// Backoff is log.cleaner.backoff.ms: the pause when no log needs cleaning.
	Backoff time.Duration

	// CleanupPolicy is log.cleanup.policy; empty means "delete".
	CleanupPolicy string
	// MinCleanableRatio is log.cleaner.min.cleanable.ratio; zero means
	// 0.5, negative means 0.
	MinCleanableRatio float64
	// MinCompactionLag is log.cleaner.min.compaction.lag.ms.
	MinCompactionLag time.Duration
	// MaxCompactionLag is log.cleaner.max.compaction.lag.ms; zero means unlimited.
	MaxCompactionLag time.Duration
	// DeleteRetention is log.cleaner.delete.retention.ms; zero means 24h,
	// negative means 0.
	DeleteRetention time.Duration

	// StepHook, if set, is called at each step of every cleaning's swap
	// (partlog.CleanSteps): the crash tests' hook (CleanerCrashEnv).
	StepHook func(step string)
}

// CleanerCrashEnv names the environment variable by which the broker
// command sets Cleaner.StepHook (ParseCleanerCrashPoint's format);
// the broker itself never reads the environment.
const CleanerCrashEnv = "TRIBUTARY_CLEANER_CRASH_AT"

// ParseCleanerCrashPoint parses "STEP" or "STEP:N" (STEP one of
// partlog.CleanSteps, N the how-many-th time, 1 by default) into a hook that
// SIGKILLs the process there; "" is no hook.
func ParseCleanerCrashPoint(s string) (func(step string), error) {
	if s == "" {
		return nil, nil
	}
	step, nth, hasN := strings.Cut(s, ":")
	if !slices.Contains(partlog.CleanSteps, step) {
		return nil, fmt.Errorf("%w: cleaner crash point %q: step must be one of %v", ErrInvalidConfig, s, partlog.CleanSteps)
	}
	n := 1
	if hasN {
		var err error
		if n, err = strconv.Atoi(nth); err != nil || n < 1 {
			return nil, fmt.Errorf("%w: cleaner crash point %q: count must be positive", ErrInvalidConfig, s)
		}
	}
	var seen atomic.Int64
	return func(at string) {
		if at == step && seen.Add(1) == int64(n) {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // SIGKILL is not handled; never go on
		}
	}, nil
}

func (c Cleaner) WithDefaults() Cleaner {
	if c.Threads <= 0 {
		c.Threads = DefaultCleanerThreads
	}
	if c.DedupeBufferSize <= 0 {
		c.DedupeBufferSize = DefaultCleanerDedupeBufferSize
	}
	if c.Backoff <= 0 {
		c.Backoff = DefaultCleanerBackoff
	}
	return c
}

// withCleanerDefaults fills the cleaner's topic settings from the broker's.
func (s LogSettings) withCleanerDefaults(c Cleaner) LogSettings {
	s.CleanupPolicy = PolicyDelete
	if p, err := ParseCleanupPolicy(c.CleanupPolicy); c.CleanupPolicy != "" && err == nil {
		s.CleanupPolicy = p
	}
	switch {
	case c.MinCleanableRatio == 0:
		s.MinCleanableDirtyRatio = partlog.DefaultMinCleanableDirtyRatio
	case c.MinCleanableRatio < 0:
		s.MinCleanableDirtyRatio = 0
	default:
		s.MinCleanableDirtyRatio = c.MinCleanableRatio
	}
	s.MinCompactionLag = max(c.MinCompactionLag, 0)
	s.MaxCompactionLag = time.Duration(math.MaxInt64)
	if c.MaxCompactionLag > 0 {
		s.MaxCompactionLag = c.MaxCompactionLag
	}
	switch {
	case c.DeleteRetention == 0:
		s.DeleteRetention = partlog.DefaultDeleteRetention
	case c.DeleteRetention < 0:
		s.DeleteRetention = 0
	default:
		s.DeleteRetention = c.DeleteRetention
	}
	return s
}

// withCleanup applies the cleanup policy and the cleaner's settings to the
// storage engine's configuration, whose zero values mean defaults.
func withCleanup(c partlog.Config, s LogSettings) partlog.Config {
	if s.CleanupPolicy == PolicyCompact {
		c.RetentionMs, c.RetentionBytes = -1, -1
	}
	c.Compact = s.CleanupPolicy != PolicyDelete && s.CleanupPolicy != ""
	c.MinCleanableDirtyRatio = s.MinCleanableDirtyRatio
	if c.MinCleanableDirtyRatio == 0 {
		c.MinCleanableDirtyRatio = math.SmallestNonzeroFloat64 // zero is "default" to the engine
	}
	c.MinCompactionLag = s.MinCompactionLag
	c.MaxCompactionLag = s.MaxCompactionLag
	c.DeleteRetention = s.DeleteRetention
	if c.DeleteRetention == 0 {
		c.DeleteRetention = -1 // zero is "default" to the engine
	}
	return c
}

// ParseCleanupPolicy normalizes a cleanup.policy list.
func ParseCleanupPolicy(v string) (string, error) {
	var del, compact bool
	for _, p := range strings.Split(v, ",") {
		switch strings.TrimSpace(p) {
		case PolicyDelete:
			del = true
		case PolicyCompact:
			compact = true
		default:
			return PolicyDelete, fmt.Errorf("must be a list of \"delete\" and \"compact\"")
		}
	}
	switch {
	case del && compact:
		return PolicyCompactDelete, nil
	case compact:
		return PolicyCompact, nil
	}
	return PolicyDelete, nil
}

// cleanerTopicKeys are the cleaner's topic-level keys.
var cleanerTopicKeys = []TopicKey{
	{
		Name: "min.cleanable.dirty.ratio", BrokerKey: "log.cleaner.min.cleanable.ratio", Type: kmsg.ConfigTypeDouble,
		Doc: "The log is cleaned when its dirty (not yet cleaned) part is at least this fraction of it.",
		Apply: func(tc *Topic, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 1 {
				return fmt.Errorf("must be a number in [0, 1]")
			}
			tc.Log.MinCleanableDirtyRatio = f
			return nil
		},
		Value:        func(tc Topic) string { return strconv.FormatFloat(tc.Log.MinCleanableDirtyRatio, 'g', -1, 64) },
		KafkaDefault: "0.5",
	},
	{
		Name: "min.compaction.lag.ms", BrokerKey: "log.cleaner.min.compaction.lag.ms", Type: kmsg.ConfigTypeLong,
		Doc: "Milliseconds a record stays uncompacted after it was written.",
		Apply: func(tc *Topic, v string) error {
			n, err := ParseLong(v, 0)
			tc.Log.MinCompactionLag = durationMs(n)
			return err
		},
		Value:        func(tc Topic) string { return strconv.FormatInt(tc.Log.MinCompactionLag.Milliseconds(), 10) },
		KafkaDefault: "0",
	},
	{
		Name: "max.compaction.lag.ms", BrokerKey: "log.cleaner.max.compaction.lag.ms", Type: kmsg.ConfigTypeLong,
		Doc: "Milliseconds after which a record is eligible for compaction whatever the dirty ratio.",
		Apply: func(tc *Topic, v string) error {
			n, err := ParseLong(v, 1)
			tc.Log.MaxCompactionLag = durationMs(n)
			return err
		},
		Value:        func(tc Topic) string { return strconv.FormatInt(msOrMax(tc.Log.MaxCompactionLag), 10) },
		KafkaDefault: strconv.FormatInt(math.MaxInt64, 10),
	},
	{
		Name: "delete.retention.ms", BrokerKey: "log.cleaner.delete.retention.ms", Type: kmsg.ConfigTypeLong,
		Doc: "Milliseconds a tombstone (a record with a null value) stays in a compacted log once cleaned.",
		Apply: func(tc *Topic, v string) error {
			n, err := ParseLong(v, 0)
			tc.Log.DeleteRetention = durationMs(n)
			return err
		},
		Value:        func(tc Topic) string { return strconv.FormatInt(tc.Log.DeleteRetention.Milliseconds(), 10) },
		KafkaDefault: strconv.FormatInt(partlog.DefaultDeleteRetention.Milliseconds(), 10),
	},
}

// msOrMax renders a duration in ms, the clamped maximum as Long.MAX_VALUE.
func msOrMax(d time.Duration) int64 {
	if d == math.MaxInt64 {
		return math.MaxInt64
	}
	return d.Milliseconds()
}

// cleanerPropertySetters are the broker keys of the cleaner.
var cleanerPropertySetters = map[string]func(c *Config, v string) error{
	"log.cleaner.enable": func(c *Config, v string) error { return setBool(&c.Cleaner.Disable, v, true) },
	"log.cleaner.threads": func(c *Config, v string) error {
		var n int32
		err := setPositiveInt32(&n, v)
		c.Cleaner.Threads = int(n)
		return err
	},
	"log.cleaner.dedupe.buffer.size": func(c *Config, v string) error {
		if err := setInt64(&c.Cleaner.DedupeBufferSize, v); err != nil {
			return err
		}
		if c.Cleaner.DedupeBufferSize < 1<<20 {
			return fmt.Errorf("must be at least 1 MiB")
		}
		return nil
	},
	"log.cleaner.io.max.bytes.per.second": func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		c.Cleaner.IOMaxBytesPerSecond = f
		return nil
	},
	"log.cleaner.backoff.ms": func(c *Config, v string) error {
		if err := setDuration(&c.Cleaner.Backoff, v, time.Millisecond); err != nil {
			return err
		}
		if c.Cleaner.Backoff <= 0 {
			return fmt.Errorf("must be positive")
		}
		return nil
	},
	"log.cleanup.policy": func(c *Config, v string) error {
		p, err := ParseCleanupPolicy(v)
		c.Cleaner.CleanupPolicy = p
		return err
	},
	"log.cleaner.min.cleanable.ratio": func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			return fmt.Errorf("must be a number in [0, 1]")
		}
		c.Cleaner.MinCleanableRatio = f
		if f == 0 {
			c.Cleaner.MinCleanableRatio = -1
		}
		return nil
	},
	"log.cleaner.min.compaction.lag.ms": func(c *Config, v string) error {
		return setDuration(&c.Cleaner.MinCompactionLag, v, time.Millisecond)
	},
	"log.cleaner.max.compaction.lag.ms": func(c *Config, v string) error {
		n, err := ParseLong(v, 1)
		c.Cleaner.MaxCompactionLag = durationMs(n)
		return err
	},
	"log.cleaner.delete.retention.ms": func(c *Config, v string) error {
		n, err := ParseLong(v, 0)
		c.Cleaner.DeleteRetention = durationMs(n)
		if n == 0 {
			c.Cleaner.DeleteRetention = -1
		}
		return err
	},
}
