package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produceSlot is a reusable record plus its enqueue time. The slot rides in
// Record.Context so that one shared promise function can find the enqueue
// time without a closure (and its allocation) per record; kgo does not touch
// a record after calling its promise, so the slot is then reused.
type produceSlot struct {
	context.Context
	rec   kgo.Record
	start time.Time
}

// produceRecorder collects the outcome of every record. kgo calls promises
// serially, but on its own goroutine, hence the atomics.
type produceRecorder struct {
	lat     []int64
	done    atomic.Int64
	failed  atomic.Int64
	errOnce sync.Once
	err     error
	slots   sync.Pool
}

func (p *produceRecorder) promise(r *kgo.Record, err error) {
	s := r.Context.(*produceSlot)
	if err != nil {
		p.failed.Add(1)
		p.errOnce.Do(func() { p.err = err })
	} else {
		p.lat[p.done.Add(1)-1] = int64(time.Since(s.start))
	}
	p.slots.Put(s)
}

// error reports failed records; call it after Flush.
func (p *produceRecorder) error(total int64) error {
	if n := p.failed.Load(); n > 0 {
		return fmt.Errorf("%w: %d of %d records not acknowledged, first error: %v", errRecordsFailed, n, total, p.err)
	}
	return nil
}

func (o *benchOptions) newProducer(extra ...kgo.Opt) (*kgo.Client, error) {
	opts := append(o.producer.kgoOpts(), kgo.DefaultProduceTopic(o.topic))
	return o.client.newClient(append(opts, extra...)...)
}

func (o *benchOptions) runProduce(ctx context.Context, out io.Writer) error {
	var extra []kgo.Opt
	if o.transactionalID != "" {
		extra = append(extra, kgo.TransactionalID(o.transactionalID))
	}
	cl, err := o.newProducer(extra...)
	if err != nil {
		return err
	}
	defer cl.Close()
	txn := benchTxn{cl: cl, on: o.transactionalID != ""}

	payload := newPayload(o.recordSize)
	rec := &produceRecorder{lat: make([]int64, o.records)}
	rec.slots.New = func() any { return &produceSlot{Context: ctx} }

	start := time.Now()
	pace := throttler{perSec: o.throughput, start: start}
	var sent int64
	for ; sent < o.records && ctx.Err() == nil; sent++ {
		if txn.on && sent%o.txnRecords == 0 {
			if err := txn.next(ctx, sent > 0); err != nil {
				return err
			}
		}
		pace.wait(ctx, sent)
		s := rec.slots.Get().(*produceSlot)
		// The timestamp is taken before Produce, which blocks while the
		// client's buffer is full: as in the Java perf test, that wait
		// counts toward the record's latency.
		s.start = time.Now()
		s.rec = kgo.Record{Value: payload, Context: s, Timestamp: s.start}
		cl.Produce(ctx, &s.rec, rec.promise)
	}
	if txn.on && ctx.Err() == nil {
		if err := txn.commit(ctx); err != nil {
			return err
		}
	} else if err := cl.Flush(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	elapsed := time.Since(start)
	done := rec.done.Load()
	res := summarize(rec.lat[:done], done*int64(o.recordSize), elapsed)
	fmt.Fprintln(out, res)
	if txn.on {
		fmt.Fprintln(out, txn)
	}
	if err := rec.error(sent); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted after %d of %d records: %w", sent, o.records, ctx.Err())
	}
	return nil
}

// benchTxn runs bench produce's transactions: one begun before the first
// record of every --txn-records, committed (its records flushed, then
// EndTxn) before the next begins and after the last record.
type benchTxn struct {
	cl        *kgo.Client
	on        bool
	committed int64
	// commitTime is the time spent committing: flushing the
	// transaction's last records and EndTxn.
	commitTime time.Duration
}

// next commits the open transaction, if any, and begins another.
func (t *benchTxn) next(ctx context.Context, open bool) error {
	if open {
		if err := t.commit(ctx); err != nil {
			return err
		}
	}
	if err := t.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	return nil
}

func (t *benchTxn) commit(ctx context.Context) error {
	start := time.Now()
	if err := t.cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush transaction %d: %w", t.committed+1, err)
	}
	if err := t.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit transaction %d: %w", t.committed+1, err)
	}
	t.commitTime += time.Since(start)
	t.committed++
	return nil
}

// String is the line bench produce prints after the perf-test line in
// transactional mode.
func (t benchTxn) String() string {
	avg := 0.0
	if t.committed > 0 {
		avg = ms(t.commitTime) / float64(t.committed)
	}
	return fmt.Sprintf("%d transactions committed, %.2f ms avg commit (flush and EndTxn).", t.committed, avg)
}
