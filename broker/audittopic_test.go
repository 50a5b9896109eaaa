package broker

import (
	"errors"
	"strings"
	"testing"
)

func TestAuditTopicCreationDefaults(t *testing.T) {
	base := Config{LogDirs: []string{"x"}, NumPartitions: 4, DefaultReplicationFactor: 2}
	for _, tc := range []struct {
		name   string
		audit  AuditTopicConfig
		topic  string
		live   int
		wantN  int32
		wantRF int16
	}{
		{"audit, defaults, 3 live", AuditTopicConfig{}, AuditTopic, 3, 4, 3},
		{"audit, defaults, 5 live", AuditTopicConfig{}, AuditTopic, 5, 4, 3},
		{"audit, defaults, 1 live", AuditTopicConfig{}, AuditTopic, 1, 4, 1},
		{"audit, defaults, none known", AuditTopicConfig{}, AuditTopic, 0, 4, 1},
		{"audit, keys set", AuditTopicConfig{Partitions: 7, Replication: 2}, AuditTopic, 3, 7, 2},
		{"audit, factor over live", AuditTopicConfig{Replication: 5}, AuditTopic, 4, 4, 4},
		{"other topic", AuditTopicConfig{Partitions: 7, Replication: 3}, "pageviews", 3, 4, 2},
	} {
		c := base
		c.Audit = tc.audit
		n, rf := c.creationDefaults(tc.topic, tc.live)
		if n != tc.wantN || rf != tc.wantRF {
			t.Errorf("%s: %d partitions, RF %d; want %d and %d", tc.name, n, rf, tc.wantN, tc.wantRF)
		}
	}
}

func TestAuditTopicProperties(t *testing.T) {
	c, warnings, err := ConfigFromProperties(map[string]string{
		"log.dirs": "x", "audit.topic.replication.factor": "2", "audit.topic.num.partitions": "6",
	})
	if err != nil || len(warnings) != 0 {
		t.Fatalf("err %v, warnings %v", err, warnings)
	}
	if c.Audit != (AuditTopicConfig{Partitions: 6, Replication: 2}) {
		t.Fatalf("Audit %+v", c.Audit)
	}
	for _, bad := range []struct{ key, value string }{
		{"audit.topic.replication.factor", "0"},
		{"audit.topic.replication.factor", "40000"},
		{"audit.topic.replication.factor", "three"},
		{"audit.topic.num.partitions", "0"},
		{"audit.topic.num.partitions", "-1"},
	} {
		_, _, err := ConfigFromProperties(map[string]string{"log.dirs": "x", bad.key: bad.value})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), bad.key) {
			t.Errorf("%s=%s: err %v, want ErrInvalidConfig naming the key", bad.key, bad.value, err)
		}
	}
	for _, bad := range []AuditTopicConfig{{Replication: -1}, {Partitions: -1}, {Partitions: maxPartitionsPerTopic + 1}} {
		err := Config{LogDirs: []string{"x"}, Audit: bad}.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "audit.topic.") {
			t.Errorf("Validate(%+v): err %v, want ErrInvalidConfig naming the key", bad, err)
		}
	}
}
