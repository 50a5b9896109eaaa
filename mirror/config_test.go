package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func validProps() map[string]string {
	return map[string]string{
		"source.dc1.bootstrap.servers":    "127.0.0.1:9092",
		"source.dc1.zookeeper.connect":    "127.0.0.1:2181/dc1",
		"source.dc.two.bootstrap.servers": "127.0.0.1:9192, 127.0.0.1:9193",
		"target.bootstrap.servers":        "127.0.0.1:9292",
		"topics":                          "page-views|clicks",
		"group.id":                        "mirror-analytics",
		"topic.rename":                    "${source}.${topic}",
		"buffer.memory":                   "1048576",
		"topic.refresh.interval.ms":       "2500",
	}
}

func TestConfigFromProperties(t *testing.T) {
	props := validProps()
	props["no.such.key"] = "1"
	c, unknown, err := ConfigFromProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 1 || unknown[0] != "no.such.key" {
		t.Errorf("unknown keys %v, want [no.such.key]", unknown)
	}
	if len(c.Sources) != 2 || c.Sources[0].Name != "dc.two" || c.Sources[1].Name != "dc1" {
		t.Fatalf("sources %+v", c.Sources)
	}
	if got := c.Sources[0].Brokers; len(got) != 2 || got[1] != "127.0.0.1:9193" || c.Sources[0].zkGroups() {
		t.Errorf("dc.two: %+v", c.Sources[0])
	}
	if !c.Sources[1].zkGroups() || c.Sources[1].ZooKeeperConnect != "127.0.0.1:2181/dc1" {
		t.Errorf("dc1: %+v", c.Sources[1])
	}
	if c.BufferBytes != 1<<20 || c.TopicRefreshInterval != 2500*time.Millisecond {
		t.Errorf("numbers: %d %v", c.BufferBytes, c.TopicRefreshInterval)
	}
	d := c.withDefaults()
	if d.TargetName != "analytics" || d.targetTopic("dc1", "clicks") != "dc1.clicks" || d.targetTopic("dc1", AuditTopic) != AuditTopic {
		t.Errorf("defaults/rename: %q %q", d.TargetName, d.targetTopic("dc1", "clicks"))
	}
	if d.ClientID != DefaultClientID {
		t.Errorf("default client id %q", d.ClientID)
	}
	props["client.id"] = "mirror-dc1"
	if c, _, err := ConfigFromProperties(props); err != nil || c.withDefaults().ClientID != "mirror-dc1" {
		t.Errorf("client.id: %q %v", c.ClientID, err)
	}
	delete(props, "client.id")
	m, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]bool{"clicks": true, "page-views": true, "page-views2": false,
		"xclicks": false, AuditTopic: true, "__consumer_offsets": false} {
		if got := m.mirrored(topic); got != want {
			t.Errorf("mirrored(%q) = %v, want %v", topic, got, want)
		}
	}
}

// TestConfigErrorsNameTheKey: every invalid configuration is refused with an
// error naming the property.
func TestConfigErrorsNameTheKey(t *testing.T) {
	for key, c := range map[string]struct {
		set   map[string]string
		unset string
	}{
		"target.bootstrap.servers":      {unset: "target.bootstrap.servers"},
		"group.id":                      {unset: "group.id"},
		"topics":                        {set: map[string]string{"topics": "page-(views"}},
		"topics.exclude":                {set: map[string]string{"topics.exclude": "["}},
		"topic.rename":                  {set: map[string]string{"topic.rename": "${source}.${nope}"}},
		"buffer.memory":                 {set: map[string]string{"buffer.memory": "-5"}},
		"topic.refresh.interval.ms":     {set: map[string]string{"topic.refresh.interval.ms": "soon"}},
		"auto.offset.reset":             {set: map[string]string{"auto.offset.reset": "middle"}},
		"producer.compression.type":     {set: map[string]string{"producer.compression.type": "brotli"}},
		"audit.enable":                  {set: map[string]string{"audit.enable": "maybe"}},
		"source.NAME":                   {set: map[string]string{"source.d/c.bootstrap.servers": "x:1"}},
		"source.NAME.bootstrap.servers": {set: map[string]string{"source.dc3.zookeeper.connect": "x:2181"}},
	} {
		props := validProps()
		delete(props, c.unset)
		for k, v := range c.set {
			props[k] = v
		}
		cfg, _, err := ConfigFromProperties(props)
		if err == nil {
			err = cfg.Validate()
		}
		want := key
		switch key {
		case "source.NAME":
			want = "d/c"
		case "source.NAME.bootstrap.servers":
			want = "source.dc3.bootstrap.servers"
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want ErrInvalidConfig naming %q", key, err, want)
		}
	}
	if _, err := New(Config{}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New(Config{}) = %v", err)
	}
}

// TestLingerZero: producer.linger.ms=0 is Kafka's "send at once", not the
// default; an absent key is the default.
func TestLingerZero(t *testing.T) {
	for _, tc := range []struct {
		value string // "" = absent
		want  time.Duration
	}{{"", DefaultLinger}, {"0", 0}, {" 0 ", 0}, {"20", 20 * time.Millisecond}} {
		props := validProps()
		if tc.value != "" {
			props["producer.linger.ms"] = tc.value
		}
		c, _, err := ConfigFromProperties(props)
		if err != nil {
			t.Fatalf("linger %q: %v", tc.value, err)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("linger %q: %v", tc.value, err)
		}
		if got := max(c.withDefaults().Linger, 0); got != tc.want {
			t.Errorf("producer.linger.ms=%q: linger %v, want %v", tc.value, got, tc.want)
		}
	}
}

// TestRetriableStops: only refusals an operator fixes without restarting
// the mirror (ACLs) are retried by stopped.partition.retry.ms.
func TestRetriableStops(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{kerr.TopicAuthorizationFailed, true},
		{fmt.Errorf("growing target topic t to 3 partitions: %w", kerr.TopicAuthorizationFailed), true},
		{kerr.ClusterAuthorizationFailed, true},
		{kerr.SaslAuthenticationFailed, true},
		{kerr.MessageTooLarge, false},
		{fmt.Errorf("%w: a 20000-byte record does not fit", kerr.MessageTooLarge), false},
		{kerr.InvalidRecord, false},
		{context.Canceled, false},
	} {
		if got := retriable(c.err); got != c.want {
			t.Errorf("retriable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestStoppedRetryProperty: stopped.partition.retry.ms, -1 for never;
// 0 and other negatives name the key.
func TestStoppedRetryProperty(t *testing.T) {
	base := map[string]string{"source.dc1.bootstrap.servers": "127.0.0.1:1", "target.bootstrap.servers": "127.0.0.1:2",
		"group.id": "g", "topics": "a"}
	for v, want := range map[string]time.Duration{"5000": 5 * time.Second, "-1": NoStoppedRetry} {
		props := maps.Clone(base)
		props["stopped.partition.retry.ms"] = v
		c, _, err := ConfigFromProperties(props)
		if err != nil || c.StoppedRetry != want {
			t.Errorf("stopped.partition.retry.ms=%s: %v, %v; want %v", v, c.StoppedRetry, err, want)
		}
	}
	for _, v := range []string{"0", "-2", "soon"} {
		props := maps.Clone(base)
		props["stopped.partition.retry.ms"] = v
		if _, _, err := ConfigFromProperties(props); err == nil || !strings.Contains(err.Error(), "stopped.partition.retry.ms") {
			t.Errorf("stopped.partition.retry.ms=%s: err %v, want one naming the key", v, err)
		}
	}
	if c := (Config{}).withDefaults(); c.StoppedRetry != DefaultStoppedRetry {
		t.Errorf("default %v, want %v", c.StoppedRetry, DefaultStoppedRetry)
	}
}
