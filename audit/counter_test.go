package audit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// memPublisher records what it is asked to publish; it fails while fail > 0.
type memPublisher struct {
	mu       sync.Mutex
	fail     int
	attempts [][]Event
	acked    []Event
}

func (p *memPublisher) Publish(_ context.Context, events []Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attempts = append(p.attempts, append([]Event(nil), events...))
	if p.fail > 0 {
		p.fail--
		return errors.New("broker away")
	}
	p.acked = append(p.acked, events...)
	return nil
}

func (p *memPublisher) ackedEvents() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.acked...)
}

type sumKey struct {
	topic  string
	window time.Time
}

func sums(events []Event) map[sumKey][3]int64 {
	out := map[sumKey][3]int64{}
	for _, e := range events {
		k := sumKey{e.Topic, e.WindowStart}
		v := out[k]
		v[0] += e.Count
		v[1] += e.Bytes
		v[2] += e.Errors
		out[k] = v
	}
	return out
}

func newTestCounter(t *testing.T, cfg Config, pub Publisher) *Counter {
	t.Helper()
	c, err := NewCounter(cfg, pub)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func TestWindowStart(t *testing.T) {
	base := time.Date(2026, 11, 30, 15, 7, 31, 500_000_000, time.UTC)
	cases := []struct {
		ts     time.Time
		window time.Duration
		want   time.Time
	}{
		{base, 10 * time.Minute, time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)},
		{base, 2 * time.Second, time.Date(2026, 11, 30, 15, 7, 30, 0, time.UTC)},
		{base, time.Hour, time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)},
		// 7 minutes do not divide a day: aligned on the Unix epoch.
		{time.UnixMilli(7*60_000*1000 + 5), 7 * time.Minute, time.UnixMilli(7 * 60_000 * 1000).UTC()},
		{time.UnixMilli(-1), time.Second, time.UnixMilli(-1000).UTC()},
		{base.In(time.FixedZone("X", 3600)), 10 * time.Minute, time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		if got := WindowStart(c.ts, c.window); !got.Equal(c.want) || got.Location() != time.UTC {
			t.Errorf("WindowStart(%v, %v) = %v, want %v UTC", c.ts, c.window, got, c.want)
		}
	}
}

func TestCounterSumsConcurrentCounts(t *testing.T) {
	pub := &memPublisher{}
	c := newTestCounter(t, Config{Tier: "producer", Cluster: "dc1", Instance: "h:1", Window: time.Second, Interval: time.Hour}, pub)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10_000; i++ {
				ts := t0.Add(time.Duration(i%3) * time.Second).Add(time.Duration(g) * time.Millisecond)
				c.Count("clicks", ts, 1, 10)
				if i%1000 == 0 {
					c.CountErrors("views", ts, 2)
				}
				c.Count("__audit", ts, 1, 1)
				c.Count("__consumer_offsets", ts, 1, 1)
			}
		}()
	}
	wg.Wait()
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := sums(pub.ackedEvents())
	want := map[sumKey][3]int64{}
	for w := 0; w < 3; w++ {
		n := int64(0)
		for i := 0; i < 10_000; i++ {
			if i%3 == w {
				n++
			}
		}
		want[sumKey{"clicks", t0.Add(time.Duration(w) * time.Second)}] = [3]int64{8 * n, 80 * n, 0}
	}
	// i%1000==0 for i = 0..9000: i%3 is 0,1,2,0,1,2,0,1,2,0.
	want[sumKey{"views", t0}] = [3]int64{0, 0, 8 * 2 * 4}
	want[sumKey{"views", t0.Add(time.Second)}] = [3]int64{0, 0, 8 * 2 * 3}
	want[sumKey{"views", t0.Add(2 * time.Second)}] = [3]int64{0, 0, 8 * 2 * 3}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sums\n got %v\nwant %v", got, want)
	}
	ids := map[string]bool{}
	for _, e := range pub.ackedEvents() {
		if ids[e.ID] {
			t.Fatalf("id %s used twice", e.ID)
		}
		ids[e.ID] = true
		if e.Tier != "producer" || e.Cluster != "dc1" || e.Instance != "h:1" || e.Window != time.Second || e.EmittedAt.IsZero() {
			t.Fatalf("event fields: %+v", e)
		}
	}
	// Nothing new: a second flush publishes nothing.
	n := len(pub.ackedEvents())
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(pub.ackedEvents()) != n {
		t.Fatalf("empty flush published %d events", len(pub.ackedEvents())-n)
	}
}

func TestCounterRetriesWithSameIDs(t *testing.T) {
	pub := &memPublisher{fail: 2}
	c := newTestCounter(t, Config{Tier: "mirror", Window: time.Minute, Interval: time.Hour}, pub)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Count("a", t0, 5, 50)
	if err := c.Flush(context.Background()); err == nil {
		t.Fatal("flush with a failing publisher succeeded")
	}
	first := pub.attempts[0]
	c.Count("a", t0, 7, 70) // a new delta: a new event, not a changed old one
	if err := c.Flush(context.Background()); err == nil {
		t.Fatal("second flush succeeded")
	}
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || first[0].Count != 5 {
		t.Fatalf("first attempt: %+v", first)
	}
	acked := pub.ackedEvents()
	if len(acked) != 2 || acked[0].ID != first[0].ID || acked[0].Count != 5 || acked[1].Count != 7 || acked[1].ID == first[0].ID {
		t.Fatalf("acked after retries: %+v (first id %s)", acked, first[0].ID)
	}
	if c.Pending() != 0 {
		t.Fatalf("pending %d after success", c.Pending())
	}
}

func TestCounterPublishesInBackgroundAndOnClose(t *testing.T) {
	pub := &memPublisher{}
	c, err := NewCounter(Config{Tier: "producer", Window: time.Minute, Interval: 20 * time.Millisecond}, pub)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	c.Count("a", t0, 3, 0)
	testenv.WaitFor(t, 30*time.Second, "a background publish", func() (bool, string) {
		return len(pub.ackedEvents()) > 0, ""
	})
	c.Count("a", t0, 4, 0)
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.Count("a", t0, 100, 0) // after Close: ignored
	if got := sums(pub.ackedEvents())[sumKey{"a", WindowStart(t0, time.Minute)}][0]; got != 7 {
		t.Fatalf("published total %d, want 7", got)
	}
	if err := c.Flush(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("flush after close: %v", err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Tier: "x", Window: -time.Second},
		{Tier: "x", Window: 1500 * time.Microsecond},
		{Tier: "x", Interval: -1},
	} {
		if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if _, err := NewCounter(Config{Tier: "x"}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil publisher: %v", err)
	}
}

// TestCounterRetiresIdleCells: a cell idle for retireAfter publishes leaves
// the map (which would otherwise grow by one cell per topic and window for
// good), and counts made after it left, into the same window, still add up.
func TestCounterRetiresIdleCells(t *testing.T) {
	pub := &memPublisher{}
	c := newTestCounter(t, Config{Tier: "producer", Window: time.Minute, Interval: time.Hour}, pub)
	ctx := context.Background()
	ts := time.Date(2026, 3, 1, 10, 0, 30, 0, time.UTC)
	c.Count("clicks", ts, 2, 20)
	for i := 0; i <= retireAfter; i++ {
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(*c.cells.Load()); n != 0 {
		t.Fatalf("%d cells after %d idle publishes, want 0", n, retireAfter)
	}
	c.Count("clicks", ts, 3, 30)
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := sums(pub.ackedEvents())[sumKey{"clicks", ts.Truncate(time.Minute)}]
	if got != [3]int64{5, 50, 0} {
		t.Errorf("published %v, want 5 records, 50 bytes", got)
	}
}
