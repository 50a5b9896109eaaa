package mirror

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/mirror/offsetsync"
)

// syncWriter follows, per source partition, the run of records the
// target acknowledged at consecutive offsets (package offsetsync) and
// writes the runs to OffsetSyncsTopic on the target: a run that ended
// once, a growing one again at every flush (same key; compaction keeps
// the last).
type syncWriter struct {
	m *Mirror

	mu    sync.Mutex
	open  map[*partState]*offsetsync.Sync
	dirty map[*partState]bool
	ended []offsetsync.Sync
}

func newSyncWriter(m *Mirror) *syncWriter {
	return &syncWriter{m: m, open: map[*partState]*offsetsync.Sync{}, dirty: map[*partState]bool{}}
}

// acked notes that the record at source offset off of ps landed at
// target offset target (called in the order of the partition's records).
func (w *syncWriter) acked(ps *partState, off, target int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.open[ps]
	if r != nil && off == r.SourceOffset+r.Count && target == r.TargetOffset+r.Count {
		r.Count++
		w.dirty[ps] = true
		return
	}
	if r != nil && w.dirty[ps] {
		w.ended = append(w.ended, *r)
	}
	w.open[ps] = &offsetsync.Sync{Source: ps.source, Topic: ps.topic, Partition: ps.partition,
		SourceOffset: off, TargetTopic: ps.target, TargetOffset: target, Count: 1}
	w.dirty[ps] = true
}

// flush writes the runs that ended or grew since the last flush and waits
// for the target's acknowledgement; what failed is written at the next.
func (w *syncWriter) flush(ctx context.Context) error {
	w.mu.Lock()
	out := w.ended
	w.ended = nil
	for ps, dirty := range w.dirty {
		if dirty {
			out = append(out, *w.open[ps])
		}
		delete(w.dirty, ps)
	}
	w.mu.Unlock()
	if len(out) == 0 {
		return nil
	}
	recs := make([]*kgo.Record, len(out))
	for i, s := range out {
		recs[i] = &kgo.Record{Topic: OffsetSyncsTopic, Partition: 0, Key: s.Key(), Value: s.Value()}
	}
	if err := w.m.target.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		w.mu.Lock()
		w.ended = append(out, w.ended...)
		w.mu.Unlock()
		return fmt.Errorf("writing offset syncs to %s: %w", OffsetSyncsTopic, err)
	}
	return nil
}

// createInternal creates a compacted one-partition topic on the target
// unless it exists.
func createInternal(ctx context.Context, adm *kadm.Client, rf int16, name string) error {
	if rf == 0 {
		rf = -1
	}
	compact := "compact"
	resp, err := adm.CreateTopic(ctx, 1, rf, map[string]*string{"cleanup.policy": &compact}, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("mirror: creating %s on the target: %w", name, err)
	}
	return nil
}

// syncTail reads OffsetSyncsTopic into a Store, catching up on demand.
type syncTail struct {
	cl    *kgo.Client
	adm   *kadm.Client
	store *offsetsync.Store
	next  int64
}

func newSyncTail(cl *kgo.Client) *syncTail {
	return &syncTail{cl: cl, adm: kadm.NewClient(cl), store: offsetsync.NewStore()}
}

// catchUp reads every sync written before it was called.
func (t *syncTail) catchUp(ctx context.Context) error {
	ends, err := t.adm.ListEndOffsets(ctx, OffsetSyncsTopic)
	if err != nil {
		return err
	}
	end, ok := ends.Lookup(OffsetSyncsTopic, 0)
	if !ok || end.Err != nil {
		return fmt.Errorf("end offset of %s: %v", OffsetSyncsTopic, end.Err)
	}
	for t.next < end.Offset {
		fs := t.cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			t.next = r.Offset + 1
			if s, err := offsetsync.Parse(r.Key, r.Value); err == nil {
				t.store.Add(s)
			}
		})
	}
	return nil
}

// syncConsumerOpts read OffsetSyncsTopic from its start.
func syncConsumerOpts() []kgo.Opt {
	return []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		OffsetSyncsTopic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(100 * time.Millisecond)}
}
