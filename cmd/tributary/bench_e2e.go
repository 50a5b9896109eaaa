package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// e2eSlot is a reusable record with its own value buffer: every e2e value
// differs in its first bytes (the send time), and kgo keeps the value until
// the promise runs, after which the slot goes back to the pool.
type e2eSlot struct {
	context.Context
	rec kgo.Record
	buf []byte
}

type e2eProducer struct {
	failed  atomic.Int64
	errOnce sync.Once
	err     error
	slots   sync.Pool
}

func (p *e2eProducer) promise(r *kgo.Record, err error) {
	if err != nil {
		p.failed.Add(1)
		p.errOnce.Do(func() { p.err = err })
	}
	p.slots.Put(r.Context.(*e2eSlot))
}

// e2eConsumer receives the records and keeps one latency per record:
// receive time minus the send time in the value.
type e2eConsumer struct {
	lat    []int64
	n      int64
	target atomic.Int64 // lowered when produced records fail, so the consumer does not wait for them
	end    time.Time
}

func (c *e2eConsumer) run(ctx context.Context, o *benchOptions, cl *kgo.Client) error {
	for c.n < c.target.Load() {
		fetches, err := o.pollIdle(ctx, cl)
		if err != nil {
			return err
		}
		// One clock read per poll: that is when the records reach the
		// application.
		now := time.Now()
		nowNs := now.UnixNano()
		for it := fetches.RecordIter(); !it.Done() && c.n < int64(len(c.lat)); {
			r := it.Next()
			if len(r.Value) < sendTimeBytes {
				continue // not one of ours
			}
			c.lat[c.n] = nowNs - int64(binary.BigEndian.Uint64(r.Value))
			c.n++
		}
		c.end = now
	}
	return nil
}

func (o *benchOptions) runE2E(ctx context.Context, adm *kadm.Client, out io.Writer) error {
	// Start at the current end of every partition, listed before the first
	// send, so the consumer neither misses records nor reads old ones.
	setupCtx, cancel := context.WithTimeout(ctx, o.client.requestTimeout)
	ends, err := adm.ListEndOffsets(setupCtx, o.topic)
	if err == nil {
		err = ends.Error()
	}
	var parts map[string]map[int32]kgo.Offset
	if err == nil {
		parts, err = o.partitionsFrom(setupCtx, adm, ends)
	}
	cancel()
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	consumer, err := o.newConsumer(parts)
	if err != nil {
		return err
	}
	defer consumer.Close()
	producer, err := o.newProducer()
	if err != nil {
		return err
	}
	defer producer.Close()

	c := &e2eConsumer{lat: make([]int64, o.records)}
	c.target.Store(o.records)
	consumed := make(chan error, 1)
	consumeCtx, stopConsumer := context.WithCancel(ctx)
	defer stopConsumer()
	go func() { consumed <- c.run(consumeCtx, o, consumer) }()

	payload := newPayload(o.recordSize)
	p := &e2eProducer{}
	p.slots.New = func() any {
		return &e2eSlot{Context: ctx, buf: append([]byte(nil), payload...)}
	}
	start := time.Now()
	pace := throttler{perSec: o.throughput, start: start}
	var sent int64
	for ; sent < o.records && ctx.Err() == nil; sent++ {
		pace.wait(ctx, sent)
		s := p.slots.Get().(*e2eSlot)
		now := time.Now()
		binary.BigEndian.PutUint64(s.buf, uint64(now.UnixNano()))
		s.rec = kgo.Record{Value: s.buf, Context: s, Timestamp: now}
		producer.Produce(ctx, &s.rec, p.promise)
	}
	if err := producer.Flush(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	c.target.Store(sent - p.failed.Load())
	consumeErr := <-consumed

	res := summarize(c.lat[:c.n], c.n*int64(o.recordSize), c.end.Sub(start))
	fmt.Fprintln(out, res)
	switch {
	case p.failed.Load() > 0:
		return fmt.Errorf("%w: %d of %d records not acknowledged, first error: %v",
			errRecordsFailed, p.failed.Load(), sent, p.err)
	case consumeErr != nil:
		return fmt.Errorf("received %d of %d records: %w", c.n, sent, consumeErr)
	}
	return nil
}
