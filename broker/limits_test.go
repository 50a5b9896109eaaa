package broker

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/config"
)

// TestLimitProperties: Kafka's names parse, "unlimited" spellings
// (Int.MaxValue, Double.MAX_VALUE) mean zero, bad values name the key.
func TestLimitProperties(t *testing.T) {
	c, _, err := config.FromProperties(map[string]string{
		"log.dirs":                         "/data",
		"connections.max.idle.ms":          "1500",
		"max.connections":                  "2147483647",
		"max.connections.per.ip":           "100",
		"max.connections.per.ip.overrides": "127.0.0.1:200, admin-host:0,::1:5",
		"controller.mutation.rate":         "50",
		"log.max.open.files":               "5000",
		"quota.window.num":                 "5",
		"quota.window.size.seconds":        "2",
	})
	if err != nil {
		t.Fatal(err)
	}
	l := c.Limits
	if l.ConnectionsMaxIdle != 1500*time.Millisecond || l.MaxConnections != 0 || l.MaxConnectionsPerIP != 100 ||
		l.ControllerMutationRate != 50 || l.MaxOpenFiles != 5000 || l.QuotaWindowNum != 5 || l.QuotaWindowSize != 2*time.Second {
		t.Fatalf("parsed %+v", l)
	}
	if o := l.MaxConnectionsPerIPOverrides; len(o) != 3 || o["127.0.0.1"] != 200 || o["admin-host"] != 0 || o["::1"] != 5 {
		t.Fatalf("overrides %v", o)
	}
	for key, bad := range map[string]string{
		"max.connections.per.ip":           "-1",
		"max.connections.per.ip.overrides": "nohost",
		"controller.mutation.rate":         "fast",
		"connections.max.idle.ms":          "soon",
	} {
		_, _, err := config.FromProperties(map[string]string{"log.dirs": "/data", key: bad})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: error %v does not name the key", key, bad, err)
		}
	}
}

func TestPlanDescriptors(t *testing.T) {
	b := planDescriptors(20000, config.Limits{}.WithDefaults())
	if b.files+b.conns+b.reserve+b.logReserve+b.acceptRsv > 20000 || b.files < 9000 || b.conns < 9000 {
		t.Fatalf("plan for 20000: %+v", b)
	}
	b = planDescriptors(20000, config.Limits{MaxOpenFiles: 1000, MaxConnections: 50}.WithDefaults())
	if b.files != 1000 || b.conns != 50 {
		t.Fatalf("explicit values not kept: %+v", b)
	}
}

// TestMutationQuota: a burst of rate x window, then one grant per 1/rate,
// with the wait until the debt is paid.
func TestMutationQuota(t *testing.T) {
	now := time.Unix(1000, 0)
	q := newMutationQuota(10, 2*time.Second, func() time.Time { return now }) // burst 20
	if w := q.take("c", 25); w != 0 {
		t.Fatalf("first take refused (%v): a bucket not in debt grants", w)
	}
	w := q.take("c", 1)
	if w < 490*time.Millisecond || w > 520*time.Millisecond {
		t.Fatalf("in debt by 5 at 10/s: wait %v, want ~500ms", w)
	}
	if q.take("d", 1) != 0 {
		t.Fatal("another client shares the bucket")
	}
	now = now.Add(w)
	if w := q.take("c", 1); w != 0 {
		t.Fatalf("after the wait: %v", w)
	}
	if newMutationQuota(0, time.Second, time.Now).take("c", 1<<30) != 0 {
		t.Fatal("rate 0 must mean unlimited")
	}
}

// TestRateLogger: one line per kind per interval, the next one carrying
// the count suppressed meanwhile.
func TestRateLogger(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(0, 0)
	r := newRateLogger(slog.New(slog.NewTextHandler(&out, nil)), time.Second, func() time.Time { return now })
	for range 1000 {
		r.log(slog.LevelWarn, "a", "flood a")
		r.log(slog.LevelWarn, "b", "flood b")
	}
	now = now.Add(time.Second)
	r.log(slog.LevelWarn, "a", "flood a")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines for 2001 events of 2 kinds over 1 s:\n%s", len(lines), out.String())
	}
	if !strings.Contains(lines[2], "flood a") || !strings.Contains(lines[2], "repeated=999") {
		t.Fatalf("third line %q lacks the suppressed count", lines[2])
	}
}
