package config

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/cluster"
)

func TestResolveTopicConfig(t *testing.T) {
	defaults := Config{LogDirs: []string{"x"}}.WithDefaults().TopicDefaults()
	tc, err := ResolveTopic(defaults, map[string]string{
		"retention.ms": "0", "retention.bytes": "-1", "segment.bytes": "1024", "segment.ms": "60000",
		"index.interval.bytes": "100", "flush.messages": "9223372036854775807", "flush.ms": "250",
		"max.message.bytes": "5000", "cleanup.policy": "delete", "message.timestamp.type": "LogAppendTime",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Topic{
		Log: LogSettings{
			SegmentBytes: 1024, SegmentMs: time.Minute, Retention: time.Nanosecond, RetentionBytes: -1,
			FlushIntervalMessages: 0, FlushInterval: 250 * time.Millisecond, IndexIntervalBytes: 100,
			CleanupPolicy: PolicyDelete, MinCleanableDirtyRatio: 0.5, MaxCompactionLag: math.MaxInt64,
			DeleteRetention: 24 * time.Hour,
		},
		MaxMessageBytes: 5000, LogAppendTime: true, MinInsyncReplicas: 1,
	}
	if tc != want {
		t.Fatalf("resolved %+v\nwant     %+v", tc, want)
	}
	for _, tt := range []struct {
		overrides map[string]string
		wantMsg   string
	}{
		{map[string]string{"retention.mss": "1"}, "Unknown topic config name: retention.mss"},
		{map[string]string{"retention.ms": "soon"}, "Invalid value soon for configuration retention.ms"},
		{map[string]string{"retention.ms": "-2"}, "configuration retention.ms: Value must be at least -1"},
		{map[string]string{"segment.bytes": "13"}, "configuration segment.bytes"},
		{map[string]string{"segment.bytes": "4294967296"}, "segment.bytes: Not a number of type INT"},
		{map[string]string{"cleanup.policy": "compact,rotate"}, "configuration cleanup.policy"},
		{map[string]string{"min.cleanable.dirty.ratio": "1.5"}, "configuration min.cleanable.dirty.ratio"},
		{map[string]string{"delete.retention.ms": "-1"}, "configuration delete.retention.ms"},
		{map[string]string{"max.compaction.lag.ms": "0"}, "configuration max.compaction.lag.ms"},
		{map[string]string{"message.timestamp.type": "create"}, "message.timestamp.type"},
		// The id is not a config: its legacy key is unknown like any other.
		{map[string]string{cluster.LegacyTopicIDConfig: "abc"}, "Unknown topic config name: " + cluster.LegacyTopicIDConfig},
	} {
		_, err := ResolveTopic(defaults, tt.overrides)
		if !errors.Is(err, ErrInvalidTopicConfig) || !strings.Contains(err.Error(), tt.wantMsg) {
			t.Errorf("%v: error %v, want ErrInvalidTopicConfig with %q", tt.overrides, err, tt.wantMsg)
		}
	}
}
