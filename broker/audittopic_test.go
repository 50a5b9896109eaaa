package broker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

func TestAuditTopicCreationDefaults(t *testing.T) {
	base := config.Config{LogDirs: []string{"x"}, NumPartitions: 4, DefaultReplicationFactor: 2}
	for _, tc := range []struct {
		name   string
		audit  config.Audit
		topic  string
		live   int
		wantN  int32
		wantRF int16
	}{
		{"audit, defaults, 3 live", config.Audit{}, AuditTopic, 3, 4, 3},
		{"audit, defaults, 5 live", config.Audit{}, AuditTopic, 5, 4, 3},
		{"audit, defaults, 1 live", config.Audit{}, AuditTopic, 1, 4, 1},
		{"audit, defaults, none known", config.Audit{}, AuditTopic, 0, 4, 1},
		{"audit, keys set", config.Audit{Partitions: 7, Replication: 2}, AuditTopic, 3, 7, 2},
		{"audit, factor over live", config.Audit{Replication: 5}, AuditTopic, 4, 4, 4},
		{"other topic", config.Audit{Partitions: 7, Replication: 3}, "pageviews", 3, 4, 2},
	} {
		c := base
		c.Audit = tc.audit
		n, rf := creationDefaults(c, tc.topic, tc.live)
		if n != tc.wantN || rf != tc.wantRF {
			t.Errorf("%s: %d partitions, RF %d; want %d and %d", tc.name, n, rf, tc.wantN, tc.wantRF)
		}
	}
}

func TestAuditTopicProperties(t *testing.T) {
	c, warnings, err := config.FromProperties(map[string]string{
		"log.dirs": "x", "audit.topic.replication.factor": "2", "audit.topic.num.partitions": "6",
	})
	if err != nil || len(warnings) != 0 {
		t.Fatalf("err %v, warnings %v", err, warnings)
	}
	if c.Audit != (config.Audit{Partitions: 6, Replication: 2}) {
		t.Fatalf("Audit %+v", c.Audit)
	}
	for _, bad := range []struct{ key, value string }{
		{"audit.topic.replication.factor", "0"},
		{"audit.topic.replication.factor", "40000"},
		{"audit.topic.replication.factor", "three"},
		{"audit.topic.num.partitions", "0"},
		{"audit.topic.num.partitions", "-1"},
	} {
		_, _, err := config.FromProperties(map[string]string{"log.dirs": "x", bad.key: bad.value})
		if !errors.Is(err, config.ErrInvalidConfig) || !strings.Contains(err.Error(), bad.key) {
			t.Errorf("%s=%s: err %v, want config.ErrInvalidConfig naming the key", bad.key, bad.value, err)
		}
	}
	for _, bad := range []config.Audit{{Replication: -1}, {Partitions: -1}, {Partitions: maxPartitionsPerTopic + 1}} {
		err := config.Config{LogDirs: []string{"x"}, Audit: bad}.Validate()
		if !errors.Is(err, config.ErrInvalidConfig) || !strings.Contains(err.Error(), "audit.topic.") {
			t.Errorf("Validate(%+v): err %v, want config.ErrInvalidConfig naming the key", bad, err)
		}
	}
}

// TestAuditTopicRetention: the broker creates __audit with the delete
// policy and audit.topic.retention.ms (7 days by default); a creator's own
// overrides win; other topics get neither.
func TestAuditTopicRetention(t *testing.T) {
	c, _, err := config.FromProperties(map[string]string{"log.dirs": "x", "audit.topic.retention.ms": "3600000"})
	if err != nil || c.Audit.Retention != time.Hour {
		t.Fatalf("audit.topic.retention.ms=3600000: %+v, %v", c.Audit, err)
	}
	for _, bad := range []string{"0", "-2", "soon"} {
		if _, _, err := config.FromProperties(map[string]string{"log.dirs": "x", "audit.topic.retention.ms": bad}); !errors.Is(err, config.ErrInvalidConfig) {
			t.Errorf("audit.topic.retention.ms=%s: err %v", bad, err)
		}
	}
	for _, tc := range []struct {
		name      string
		retention time.Duration
		given     map[string]*string
		want      string
	}{
		{"default", 0, nil, "604800000"},
		{"configured", time.Hour, nil, "3600000"},
		{"creator's override", time.Hour, map[string]*string{"retention.ms": kadm.StringPtr("60000")}, "60000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBroker(t, func(c *config.Config) { c.Audit.Retention = tc.retention })
			ctx := testenv.Context(t, 30*time.Second)
			adm := kadm.NewClient(newClient(t, b.Addr()))
			if resp, err := adm.CreateTopic(ctx, -1, -1, tc.given, AuditTopic); err != nil || resp.Err != nil {
				t.Fatalf("create: %v %v", err, resp.Err)
			}
			if resp, err := adm.CreateTopic(ctx, 1, 1, nil, "events"); err != nil || resp.Err != nil {
				t.Fatalf("create: %v %v", err, resp.Err)
			}
			rcs, err := adm.DescribeTopicConfigs(ctx, AuditTopic, "events")
			if err != nil {
				t.Fatal(err)
			}
			for _, rc := range rcs {
				got := map[string]string{}
				for _, c := range rc.Configs {
					if c.Value != nil {
						got[c.Key] = *c.Value
					}
				}
				want, src := tc.want, kmsg.ConfigSourceDynamicTopicConfig
				if rc.Name != AuditTopic {
					want, src = "604800000", kmsg.ConfigSourceDefaultConfig // log.retention.hours=168
				}
				if got["cleanup.policy"] != "delete" || got["retention.ms"] != want {
					t.Errorf("%s: cleanup.policy=%s retention.ms=%s, want delete and %s", rc.Name, got["cleanup.policy"], got["retention.ms"], want)
				}
				for _, c := range rc.Configs {
					if c.Key == "retention.ms" && c.Source != src {
						t.Errorf("%s: retention.ms source %v, want %v", rc.Name, c.Source, src)
					}
				}
			}
		})
	}
}
