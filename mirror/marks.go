package mirror

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// pendingMark is a partition's latest acknowledged offset not yet given
// to its group: mark(next) tells the group that every record before next
// is handled, so that its next commit may write next.
type pendingMark struct {
	next int64
	mark func(next int64)
}

// marks holds acknowledged offsets back from the groups until the audit
// counts of their records are published. The audit tier "mirror" must
// never count less than what reached the target (audit/doc.go: no false
// loss); a mirror SIGKILLed after committing an offset but before
// publishing the counts of the records before it would, since the next
// owner starts after them and never counts them again. So a record is
// counted when the target acknowledges it, its offset waits in
// partState.pending, and release flushes the counter and only then marks
// what it took. Without a counter (audit.enable=false) marks go straight
// to the group.
type marks struct {
	mu sync.Mutex // one release at a time
}

// releaseMarks publishes the counts of every record acknowledged so far
// and then hands the marks taken before the flush to their groups. On a
// failed flush the marks stay pending (a newer one taken meanwhile wins)
// and the error is returned: nothing is committed that was not counted.
func (m *Mirror) releaseMarks(ctx context.Context) error {
	if m.counter == nil {
		return nil
	}
	m.marks.mu.Lock()
	defer m.marks.mu.Unlock()
	m.mu.Lock()
	parts := slices.Collect(maps.Values(m.parts))
	m.mu.Unlock()
	type taken struct {
		ps *partState
		pm *pendingMark
	}
	var got []taken
	for _, ps := range parts {
		// Taken before the flush: the record of each was counted before
		// its mark was stored.
		if pm := ps.pending.Swap(nil); pm != nil {
			got = append(got, taken{ps, pm})
		}
	}
	if len(got) == 0 {
		return nil
	}
	if err := m.counter.Flush(ctx); err != nil {
		for _, t := range got {
			t.ps.pending.CompareAndSwap(nil, t.pm)
		}
		return err
	}
	for _, t := range got {
		t.pm.mark(t.pm.next)
	}
	return nil
}

// releaseLoop releases the marks every offset.commit.interval.ms until ctx
// ends (the drain releases the last ones).
func (m *Mirror) releaseLoop(ctx context.Context) {
	if m.counter == nil {
		return
	}
	t := time.NewTicker(m.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := m.releaseMarks(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("publishing the audit counts failed; offsets are committed once they are published", "err", err)
		}
	}
}
