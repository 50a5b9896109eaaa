package txn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// memLog is an in-memory state partition (unit tests only).
type memLog struct {
	mu      sync.Mutex
	records []Record
}

func (l *memLog) Append(rs []Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, rs...)
	return nil
}

func (l *memLog) Replay(fn func(Record) error) error {
	l.mu.Lock()
	rs := append([]Record(nil), l.records...)
	l.mu.Unlock()
	for _, r := range rs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (l *memLog) states(t *testing.T, id string) []State {
	t.Helper()
	var out []State
	_ = l.Replay(func(r Record) error {
		rid, m, err := decodeRecord(r)
		if err != nil {
			t.Fatalf("record does not decode: %v", err)
		}
		if rid == id && m != nil {
			out = append(out, m.state)
		}
		return nil
	})
	return out
}

// markerLog records the markers written; while fail is set every write
// fails.
type markerLog struct {
	mu   sync.Mutex
	got  []Marker
	fail atomic.Bool
}

func (m *markerLog) WriteMarkers(_ context.Context, mk Marker) error {
	if m.fail.Load() {
		return errors.New("leader not available")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, mk)
	return nil
}

func (m *markerLog) markers() []Marker {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Marker(nil), m.got...)
}

type clock struct{ ms atomic.Int64 }

func (c *clock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

func newTestCoordinator(t *testing.T, log *memLog, mk *markerLog, clk *clock) *Coordinator {
	t.Helper()
	var next atomic.Int64
	next.Store(1000)
	c, err := New(Config{StatePartitions: 1, MaxTimeout: time.Minute, Now: clk.now},
		func(context.Context) (int64, error) { return next.Add(1) - 1, nil }, mk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.Load(0, log, 7)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.AwaitLoaded(ctx, 0); err != nil {
		t.Fatal(err)
	}
	return c
}

func wantErr(t *testing.T, what string, got error, want *kerr.Error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

func awaitState(t *testing.T, c *Coordinator, id string, want State) Transaction {
	t.Helper()
	var tx Transaction
	testenv.WaitFor(t, 10*time.Second, "transaction "+id+" in state "+want.String(), func() (bool, string) {
		var err error
		tx, err = c.Describe(id)
		return err == nil && tx.State == want, fmt.Sprintf("%+v %v", tx, err)
	})
	return tx
}

func TestInitProducerIDBumpsEpochAndFences(t *testing.T) {
	log, mk, clk := &memLog{}, &markerLog{}, &clock{}
	c := newTestCoordinator(t, log, mk, clk)
	ctx := context.Background()
	pid, epoch, err := c.InitProducerID(ctx, "t1", 10000, -1, -1)
	if err != nil || pid != 1000 || epoch != 0 {
		t.Fatalf("first init: %d/%d %v", pid, epoch, err)
	}
	_, _, err = c.InitProducerID(ctx, "t1", 60001, -1, -1)
	wantErr(t, "timeout past the maximum", err, kerr.InvalidTransactionTimeout)
	pid2, epoch2, err := c.InitProducerID(ctx, "t1", 10000, -1, -1)
	if err != nil || pid2 != pid || epoch2 != 1 {
		t.Fatalf("second init: %d/%d %v", pid2, epoch2, err)
	}
	// KIP-360: a retry with what the producer held before gets the same.
	pid3, epoch3, err := c.InitProducerID(ctx, "t1", 10000, pid, 0)
	if err != nil || pid3 != pid || epoch3 != 1 {
		t.Fatalf("retried init: %d/%d %v", pid3, epoch3, err)
	}
	_, _, err = c.InitProducerID(ctx, "t1", 10000, pid+5, 0)
	wantErr(t, "init with a foreign producer id", err, kerr.ProducerFenced)
	// The zombie at epoch 0 is fenced; nothing changes.
	before := len(log.records)
	wantErr(t, "add at the old epoch", c.AddPartitions("t1", pid, 0, []TopicPartition{{"a", 0}}), kerr.ProducerFenced)
	wantErr(t, "add with another producer id", c.AddPartitions("t1", pid+1, 1, []TopicPartition{{"a", 0}}), kerr.InvalidProducerIDMapping)
	wantErr(t, "end without a transaction", c.EndTxn("t1", pid, 1, true), kerr.InvalidTxnState)
	if len(log.records) != before {
		t.Fatalf("refused requests wrote %d records", len(log.records)-before)
	}
	if tx, _ := c.Describe("t1"); tx.State != Empty || tx.ProducerEpoch != 1 {
		t.Fatalf("after refused requests: %+v", tx)
	}
	_, err = c.Describe("unknown")
	wantErr(t, "describe unknown", err, kerr.TransactionalIDNotFound)
}

func TestCommitWritesMarkersThenCompletes(t *testing.T) {
	log, mk, clk := &memLog{}, &markerLog{}, &clock{}
	c := newTestCoordinator(t, log, mk, clk)
	pid, epoch, err := c.InitProducerID(context.Background(), "t1", 10000, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	tps := []TopicPartition{{"b", 1}, {"a", 0}}
	if err := c.AddPartitions("t1", pid, epoch, tps); err != nil {
		t.Fatal(err)
	}
	if err := c.AddPartitions("t1", pid, epoch, tps[:1]); err != nil { // already in: no write
		t.Fatal(err)
	}
	if err := c.EndTxn("t1", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	awaitState(t, c, "t1", CompleteCommit)
	if err := c.EndTxn("t1", pid, epoch, true); err != nil {
		t.Fatalf("retried commit: %v", err)
	}
	wantErr(t, "abort after commit", c.EndTxn("t1", pid, epoch, false), kerr.InvalidTxnState)
	got := mk.markers()
	if len(got) != 1 || !got[0].Commit || got[0].ProducerID != pid || got[0].ProducerEpoch != epoch || got[0].CoordinatorEpoch != 7 ||
		len(got[0].Partitions) != 2 || got[0].Partitions[0] != (TopicPartition{"a", 0}) || got[0].Partitions[1] != (TopicPartition{"b", 1}) {
		t.Fatalf("markers: %+v", got)
	}
	want := []State{Empty, Ongoing, PrepareCommit, CompleteCommit}
	if s := log.states(t, "t1"); len(s) != len(want) || s[0] != want[0] || s[1] != want[1] || s[2] != want[2] || s[3] != want[3] {
		t.Fatalf("logged states %v, want %v", s, want)
	}
}

func TestNewCoordinatorCompletesPreparedAndAbortsTimedOut(t *testing.T) {
	log, mk, clk := &memLog{}, &markerLog{}, &clock{}
	c := newTestCoordinator(t, log, mk, clk)
	ctx := context.Background()
	p1, e1, _ := c.InitProducerID(ctx, "prepared", 10000, -1, -1)
	p2, e2, _ := c.InitProducerID(ctx, "ongoing", 10000, -1, -1)
	if err := c.AddPartitions("prepared", p1, e1, []TopicPartition{{"a", 0}}); err != nil {
		t.Fatal(err)
	}
	if err := c.AddPartitions("ongoing", p2, e2, []TopicPartition{{"a", 1}}); err != nil {
		t.Fatal(err)
	}
	mk.fail.Store(true) // the leaders are gone: the commit stays prepared
	if err := c.EndTxn("prepared", p1, e1, true); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "init while completing", func() error { _, _, err := c.InitProducerID(ctx, "prepared", 10000, -1, -1); return err }(),
		kerr.ConcurrentTransactions)
	c.Unload(0)
	_, err := c.Describe("prepared")
	wantErr(t, "describe after unload", err, kerr.NotCoordinator)

	mk.fail.Store(false)
	c2 := newTestCoordinator(t, log, mk, clk)
	awaitState(t, c2, "prepared", CompleteCommit)
	if tx := awaitState(t, c2, "ongoing", Ongoing); tx.ProducerEpoch != e2 {
		t.Fatalf("ongoing after load: %+v", tx)
	}
	c2.AbortTimedOut() // not yet timed out
	if tx, _ := c2.Describe("ongoing"); tx.State != Ongoing {
		t.Fatalf("aborted before its timeout: %+v", tx)
	}
	clk.ms.Add(10001)
	c2.AbortTimedOut()
	tx := awaitState(t, c2, "ongoing", CompleteAbort)
	if tx.ProducerEpoch != e2+1 {
		t.Fatalf("timed-out abort did not bump the epoch: %+v", tx)
	}
	wantErr(t, "the fenced producer's commit", c2.EndTxn("ongoing", p2, e2, true), kerr.ProducerFenced)
	var sawAbort bool
	for _, m := range mk.markers() {
		if m.ProducerID == p2 && !m.Commit && m.ProducerEpoch == e2+1 {
			sawAbort = true
		}
	}
	if !sawAbort {
		t.Fatalf("no abort marker at the bumped epoch: %+v", mk.markers())
	}
}

func TestInitWithOngoingTransactionAbortsIt(t *testing.T) {
	log, mk, clk := &memLog{}, &markerLog{}, &clock{}
	c := newTestCoordinator(t, log, mk, clk)
	ctx := context.Background()
	pid, epoch, _ := c.InitProducerID(ctx, "t", 10000, -1, -1)
	if err := c.AddPartitions("t", pid, epoch, []TopicPartition{{"a", 0}}); err != nil {
		t.Fatal(err)
	}
	_, _, err := c.InitProducerID(ctx, "t", 10000, -1, -1)
	wantErr(t, "init over an open transaction", err, kerr.ConcurrentTransactions)
	awaitState(t, c, "t", CompleteAbort)
	p, e, err := c.InitProducerID(ctx, "t", 10000, -1, -1)
	if err != nil || p != pid || e != epoch+2 {
		t.Fatalf("init after the abort: %d/%d %v", p, e, err)
	}
	clk.ms.Add(DefaultIDExpiration.Milliseconds() + 1)
	c.RemoveExpired()
	_, err = c.Describe("t")
	wantErr(t, "describe expired", err, kerr.TransactionalIDNotFound)
}

// failingLog is a state partition that cannot be read back.
type failingLog struct{ memLog }

func (l *failingLog) Replay(func(Record) error) error { return errors.New("disk gone") }

// TestFailedReplayIsNotServed: a state partition that cannot be read back
// is unloaded (unlike an offsets partition, served with what was read):
// its transactional ids get NOT_COORDINATOR, and a later load serves it.
func TestFailedReplayIsNotServed(t *testing.T) {
	c := newTestCoordinator(t, &memLog{}, &markerLog{}, &clock{})
	c.Unload(0)
	c.Load(0, &failingLog{}, 8)
	testenv.WaitFor(t, 10*time.Second, "the failed partition unloaded", func() (bool, string) {
		s := c.Serving()
		return len(s) == 0, fmt.Sprint(s)
	})
	_, err := c.Describe("tx")
	wantErr(t, "Describe on a partition that failed to load", err, kerr.NotCoordinator)

	c.Load(0, &memLog{}, 9)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.AwaitLoaded(ctx, 0); err != nil {
		t.Fatal(err)
	}
	_, err = c.Describe("tx")
	wantErr(t, "Describe after a new load", err, kerr.TransactionalIDNotFound)
}
