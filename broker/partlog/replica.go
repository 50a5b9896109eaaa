package partlog

import (
	"fmt"
	"math"
)

// AppendReplica appends batches a follower fetched from its leader: one or
// more concatenated magic-2 batches that already carry their offsets. The
// first base offset must not be below EndOffset() and each batch must start
// after the previous one ends, else ErrOffsetMismatch and nothing is
// written. A base offset above the expected one is a gap the leader's
// cleaner left (as in Kafka, the follower's log end jumps to the batch), and
// a batch may hold fewer records than offsets (the cleaner's rebuilt
// batches); Append, which assigns offsets itself, accepts neither.
// Offsets, leader epochs and timestamps are kept as given, so the bytes are
// the leader's; the time index, the leader epoch cache and the producer
// (idempotence) state are updated as Append would, except that no batch is
// rejected or reported as a duplicate: the leader already decided. All or
// nothing, like Append.
func (l *Log) AppendReplica(batches []byte) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return AppendResult{}, ErrClosed
	}
	hs, err := validateBatches(batches, l.scratch[:0], true)
	l.scratch = hs[:0]
	if err != nil {
		return AppendResult{}, err
	}

	nowMs := l.cfg.Now().UnixMilli()
	now := l.cfg.Now()
	var overlay map[int64]*producerEntry
	var done []completedTxn
	next := l.end.Load()
	var maxTs int64 = -1
	var records int64
	gaps := false
	for i := range hs {
		h := &hs[i]
		if h.baseOffset < next {
			return AppendResult{}, fmt.Errorf("%w: batch %d has base offset %d, below the expected %d",
				ErrOffsetMismatch, i, h.baseOffset, next)
		}
		gaps = gaps || h.baseOffset > next || h.recordCount != h.lastOffsetDelta+1
		if h.producerID >= 0 {
			if overlay == nil {
				overlay = map[int64]*producerEntry{}
			}
			if d, ok := update(overlay, l.producers, *h, nowMs); ok {
				done = append(done, d)
			}
		}
		next = h.lastOffset() + 1
		maxTs = max(maxTs, h.maxTimestamp)
		records += int64(h.recordCount)
	}
	// An empty active segment takes the batches whatever the gap (it rolls
	// only once it holds some): its index must still reach them.
	if l.active.size.Load() == 0 && next-1-l.active.base > math.MaxUint32 {
		return AppendResult{}, fmt.Errorf("%w: batches up to offset %d are too far past the empty active segment %d",
			ErrOffsetMismatch, next-1, l.active.base)
	}
	if gaps {
		if err := l.allowGapsFromNowOn(); err != nil {
			return AppendResult{}, err
		}
	}
	if err := l.commit(batches, hs, overlay, done, next, maxTs, records, now); err != nil {
		return AppendResult{}, err
	}
	return AppendResult{BaseOffset: hs[0].baseOffset, LastOffset: next - 1, MaxTimestamp: maxTs, LogStartOffset: l.start.Load()}, nil
}
