package broker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

func TestTopicNameValidation(t *testing.T) {
	for _, ok := range []string{"a", "A.b_c-9", strings.Repeat("x", 249)} {
		if err := validateTopicName(ok); err != nil {
			t.Errorf("%q rejected: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a b", "a/b", "ä", strings.Repeat("x", 250)} {
		if err := validateTopicName(bad); !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("%q accepted", bad)
		}
	}
	if name, p, ok := parsePartitionDir("my-topic-12"); !ok || name != "my-topic" || p != 12 {
		t.Errorf("parsePartitionDir: %q %d %v", name, p, ok)
	}
	for _, bad := range []string{"topic", "topic-", "topic-01", "-3", "a b-1"} {
		if _, _, ok := parsePartitionDir(bad); ok {
			t.Errorf("parsePartitionDir(%q) accepted", bad)
		}
	}
}

func TestMetricsEndpoint(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) { c.MetricsListen = "127.0.0.1:0" })
	if err := b.CreateTopic(testenv.Context(t, time.Minute), "m", 1); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, b.Addr())
	c.roundTrip(produceRequest(9, 1, "m", 0, makeBatch(1, -1, -1, -1, "a", "b", "c")))
	if heap := httpGet(t, "http://"+b.MetricsAddr()+"/debug/pprof/heap?debug=1"); !strings.Contains(heap, "heap profile:") {
		t.Errorf("/debug/pprof/heap does not serve a heap profile: %.200q", heap)
	}
	// A request's duration is observed once its response is written, so
	// the client may scrape before it: wait for every line.
	wants := []string{
		`tributary_broker_records_in_total{topic="m"} 3`,
		`tributary_broker_log_end_offset{partition="0",topic="m"} 3`,
		`tributary_broker_request_duration_seconds_count{api="Produce"} 1`,
		`tributary_broker_bytes_in_total{topic="m"}`,
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		body := httpGet(t, "http://"+b.MetricsAddr()+"/metrics")
		var missing []string
		for _, want := range wants {
			if !strings.Contains(body, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %q after 10s", missing)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
