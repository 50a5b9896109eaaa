package loader_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/loader"
)

// TestLoadTransactionalTopic loads a topic written in transactions (as the
// mirror's exactly.once mode writes analytics): committed, aborted, then
// committed again, so that the partition ends in a COMMIT marker (an
// offset without a record). The run must end (not wait for a record at
// the marker's offset) and load the committed records exactly once, and
// under the default read_committed none of the aborted ones.
func TestLoadTransactionalTopic(t *testing.T) {
	c := newCluster(t)
	const topic = "txn-views"
	c.CreateTopic(t, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tx := c.Client(t, kgo.TransactionalID("loader-txn-test"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic(topic))
	start := hourStart()
	record := func(i int) *kgo.Record {
		v, err := c.ser.Encode(ctx, topic+"-value", schemaV1, map[string]any{"id": int64(i), "page": page(i)})
		if err != nil {
			t.Fatal(err)
		}
		return &kgo.Record{Topic: topic, Value: v, Timestamp: start.Add(time.Duration(i) * time.Second)}
	}
	// ids 0-9 committed, 100-104 aborted, 10-19 committed.
	batches := []struct {
		ids    []int
		commit bool
	}{{seq(0, 10), true}, {seq(100, 105), false}, {seq(10, 20), true}}
	for _, b := range batches {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, i := range b.ids {
			if err := tx.ProduceSync(ctx, record(i)).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.EndTransaction(ctx, kgo.TransactionEndTry(b.commit)); err != nil {
			t.Fatal(err)
		}
	}
	for _, isolation := range []string{loader.ReadCommitted, loader.ReadUncommitted} {
		t.Run(isolation, func(t *testing.T) {
			fc := fileSystems[0]
			fsys, base, uri := fc.open(t)
			cfg := fc.config(t, c, "txn-"+isolation, topic, uri)
			cfg.IsolationLevel = isolation
			l, err := loader.New(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			runCtx, runCancel := context.WithTimeout(ctx, time.Minute)
			defer runCancel()
			sum, err := l.Run(runCtx)
			if err != nil {
				t.Fatalf("run over a partition ending in a transaction marker: %v (%+v)", err, sum)
			}
			got := readAll(t, fsys, base)
			for i := 0; i < 20; i++ {
				if len(got[int64(i)]) != 1 {
					t.Errorf("committed record %d landed %d times", i, len(got[int64(i)]))
				} else if p := got[int64(i)][0].rec["page"]; p != page(i) {
					t.Errorf("committed record %d: page %v, want %s", i, p, page(i))
				}
			}
			// read_uncommitted reads the aborted records too, as a Kafka
			// consumer's default does.
			want, aborted := int64(20), 0
			if isolation == loader.ReadUncommitted {
				want, aborted = 25, 1
			}
			for i := 100; i < 105; i++ {
				if len(got[int64(i)]) != aborted {
					t.Errorf("aborted record %d landed %d times, want %d", i, len(got[int64(i)]), aborted)
				}
			}
			if sum.Records != want {
				t.Errorf("summary %+v, want %d records", sum, want)
			}
			// Nothing new: the next run ends at once and loads nothing.
			if sum, err := l.Run(runCtx); err != nil || sum.Records != 0 {
				t.Errorf("second run: %+v, %v", sum, err)
			}
		})
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}
