package config

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"
)

func TestCleanerTopicConfig(t *testing.T) {
	defaults := Config{LogDirs: []string{"x"}}.WithDefaults().TopicDefaults()
	for _, tt := range []struct {
		policy, want string
		retained     bool // retention by time still applies
	}{
		{"compact", PolicyCompact, false},
		{"compact,delete", PolicyCompactDelete, true},
		{"delete, compact", PolicyCompactDelete, true},
		{"delete", PolicyDelete, true},
	} {
		tc, err := ResolveTopic(defaults, map[string]string{
			"cleanup.policy": tt.policy, "min.cleanable.dirty.ratio": "0", "min.compaction.lag.ms": "1000",
			"max.compaction.lag.ms": "60000", "delete.retention.ms": "0", "retention.ms": "3600000",
		})
		if err != nil {
			t.Fatalf("%s: %v", tt.policy, err)
		}
		if tc.Log.CleanupPolicy != tt.want {
			t.Errorf("%s: policy %q, want %q", tt.policy, tc.Log.CleanupPolicy, tt.want)
		}
		lc := tc.Log.LogConfig()
		if lc.Compact != (tt.want != PolicyDelete) {
			t.Errorf("%s: Compact = %v", tt.policy, lc.Compact)
		}
		if got := lc.RetentionMs > 0; got != tt.retained {
			t.Errorf("%s: RetentionMs %v, want retention %v", tt.policy, lc.RetentionMs, tt.retained)
		}
		if lc.MinCleanableDirtyRatio <= 0 || lc.MinCleanableDirtyRatio > 1e-300 {
			t.Errorf("ratio 0 gave %v to the engine, want a tiny positive value", lc.MinCleanableDirtyRatio)
		}
		if lc.DeleteRetention >= 0 || lc.MinCompactionLag != time.Second || lc.MaxCompactionLag != time.Minute {
			t.Errorf("engine config %+v", lc)
		}
	}
	lc := defaults.Log.LogConfig()
	if lc.Compact || lc.MinCleanableDirtyRatio != 0.5 || lc.DeleteRetention != 24*time.Hour || lc.MaxCompactionLag != math.MaxInt64 {
		t.Errorf("defaults: %+v", lc)
	}
}

func TestCleanerBrokerProperties(t *testing.T) {
	c, _, err := FromProperties(map[string]string{
		"log.dirs": "x", "log.cleaner.enable": "false", "log.cleaner.threads": "2",
		"log.cleaner.dedupe.buffer.size": "4194304", "log.cleaner.io.max.bytes.per.second": "1e6",
		"log.cleaner.backoff.ms": "250", "log.cleanup.policy": "compact",
		"log.cleaner.delete.retention.ms": "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Cleaner{Disable: true, Threads: 2, DedupeBufferSize: 4 << 20, IOMaxBytesPerSecond: 1e6,
		Backoff: 250 * time.Millisecond, CleanupPolicy: PolicyCompact, DeleteRetention: -1}
	if !reflect.DeepEqual(c.Cleaner, want) {
		t.Errorf("Cleaner = %+v\nwant      %+v", c.Cleaner, want)
	}
	if s := c.WithDefaults().TopicDefaults().Log; s.CleanupPolicy != PolicyCompact || s.DeleteRetention != 0 {
		t.Errorf("topic defaults %+v", s)
	}
	for _, kv := range [][2]string{{"log.cleaner.threads", "0"}, {"log.cleaner.dedupe.buffer.size", "10"},
		{"log.cleanup.policy", "keep"}, {"log.cleaner.backoff.ms", "0"}} {
		if _, _, err := FromProperties(map[string]string{"log.dirs": "x", kv[0]: kv[1]}); err == nil {
			t.Errorf("%s=%s accepted", kv[0], kv[1])
		}
	}
}

func TestParseCleanerCrashPoint(t *testing.T) {
	if h, err := ParseCleanerCrashPoint(""); h != nil || err != nil {
		t.Fatalf("empty: %v %v", h != nil, err)
	}
	for _, ok := range []string{"cleaned", "swap:3", "checkpoint:1"} {
		if h, err := ParseCleanerCrashPoint(ok); h == nil || err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"nope", "swap:0", "swap:x", ":2"} {
		if _, err := ParseCleanerCrashPoint(bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err %v, want ErrInvalidConfig", bad, err)
		}
	}
}
