package store

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/tributary/tributary/audit"
)

func newStore(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ev(id, tier, cluster, topic string, start time.Time, count int64) audit.Event {
	return audit.Event{ID: id, Tier: tier, Cluster: cluster, Instance: "i-" + cluster, Topic: topic,
		WindowStart: start, Window: time.Second, Count: count, Bytes: 10 * count}
}

func TestApplyDedupsAndPersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	s := newStore(t, path)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(time.Minute)
	res, err := s.Apply([]audit.Event{
		ev("a", "producer", "dc1", "clicks", t0, 10),
		ev("b", "producer", "dc2", "clicks", t0, 5),
		ev("c", "consumer", "dc1", "clicks", t0.Add(time.Second), 7),
		ev("a", "producer", "dc1", "clicks", t0, 10), // same batch duplicate
	}, []Position{{"dc1", 0, 4}, {"dc2", 3, 9}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if res != (Result{Applied: 3, Duplicates: 1}) {
		t.Fatalf("result %+v", res)
	}
	// The same events again from another cluster (mirrored __audit): no change.
	res, err = s.Apply([]audit.Event{ev("b", "producer", "dc2", "clicks", t0, 5), ev("d", "producer", "dc1", "views", t0, 1)},
		[]Position{{"analytics", 0, 2}}, now)
	if err != nil || res != (Result{Applied: 1, Duplicates: 1}) {
		t.Fatalf("second apply: %+v %v", res, err)
	}
	s.Close()

	s = newStore(t, path)
	pos, err := s.Positions("dc1")
	if err != nil || !reflect.DeepEqual(pos, map[int32]int64{0: 4}) {
		t.Fatalf("dc1 positions %v %v", pos, err)
	}
	if pos, _ := s.Positions("dc2"); !reflect.DeepEqual(pos, map[int32]int64{3: 9}) {
		t.Fatalf("dc2 positions %v", pos)
	}
	topics, err := s.Topics()
	if err != nil || !reflect.DeepEqual(topics, []string{"clicks", "views"}) {
		t.Fatalf("topics %v %v", topics, err)
	}
	ws, err := s.Windows("clicks", time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Window{
		{Topic: "clicks", Start: t0, Length: time.Second, LastUpdate: now, Rows: []Row{
			{"producer", "dc1", "i-dc1", 10, 100, 0}, {"producer", "dc2", "i-dc2", 5, 50, 0}}},
		{Topic: "clicks", Start: t0.Add(time.Second), Length: time.Second, LastUpdate: now, Rows: []Row{
			{"consumer", "dc1", "i-dc1", 7, 70, 0}}},
	}
	if !reflect.DeepEqual(ws, want) {
		t.Fatalf("windows\n got %+v\nwant %+v", ws, want)
	}
	ws, _ = s.Windows("clicks", t0.Add(time.Second), t0.Add(2*time.Second))
	if len(ws) != 1 || !ws[0].Start.Equal(t0.Add(time.Second)) {
		t.Fatalf("range query: %+v", ws)
	}
	if n, _ := s.EventCount(); n != 4 {
		t.Fatalf("event ids %d, want 4", n)
	}
}

func TestApplyRefusesNUL(t *testing.T) {
	s := newStore(t, filepath.Join(t.TempDir(), "audit.db"))
	e := ev("x", "pro\x00ducer", "dc1", "t", time.Unix(0, 0), 1)
	if _, err := s.Apply([]audit.Event{e}, nil, time.Now()); !errors.Is(err, ErrBadName) {
		t.Fatalf("NUL in tier: %v", err)
	}
}

func TestPruneForgetsOldWindowsAndIDs(t *testing.T) {
	s := newStore(t, filepath.Join(t.TempDir(), "audit.db"))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	evs := []audit.Event{
		ev("old", "producer", "dc1", "clicks", t0, 1),
		ev("new", "producer", "dc1", "clicks", t0.Add(time.Hour), 2),
		ev("other", "producer", "dc1", "views", t0, 3),
	}
	if _, err := s.Apply(evs, nil, t0); err != nil {
		t.Fatal(err)
	}
	n, err := s.Prune(t0.Add(time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("pruned %d windows (%v), want 2", n, err)
	}
	ws, _ := s.Windows("clicks", time.Time{}, time.Time{})
	if len(ws) != 1 || !ws[0].Start.Equal(t0.Add(time.Hour)) || ws[0].Rows[0].Count != 2 {
		t.Fatalf("after prune: %+v", ws)
	}
	if topics, _ := s.Topics(); !reflect.DeepEqual(topics, []string{"clicks"}) {
		t.Fatalf("topics after prune %v", topics)
	}
	if n, _ := s.EventCount(); n != 1 {
		t.Fatalf("ids after prune %d, want 1", n)
	}
	// The kept ID still deduplicates.
	if res, _ := s.Apply(evs[1:2], nil, t0); res.Duplicates != 1 {
		t.Fatalf("kept id not deduplicated: %+v", res)
	}
}
