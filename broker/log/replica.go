package log

import "fmt"

// AppendReplica appends batches a follower fetched from its leader: one or
// more concatenated magic-2 batches that already carry their offsets. The
// first base offset must equal EndOffset() and the batches must follow one
// another without gaps, else ErrOffsetMismatch and nothing is written.
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
	hs, err := validateBatches(batches, l.scratch[:0])
	l.scratch = hs[:0]
	if err != nil {
		return AppendResult{}, err
	}

	nowMs := l.cfg.Now().UnixMilli()
	now := l.cfg.Now()
	var overlay map[int64]*producerEntry
	next := l.end.Load()
	var maxTs int64 = -1
	var records int64
	for i := range hs {
		h := &hs[i]
		if h.baseOffset != next {
			return AppendResult{}, fmt.Errorf("%w: batch %d has base offset %d, log end offset is %d",
				ErrOffsetMismatch, i, h.baseOffset, next)
		}
		if h.producerID >= 0 {
			if overlay == nil {
				overlay = map[int64]*producerEntry{}
			}
			update(overlay, l.producers, *h, nowMs)
		}
		next = h.lastOffset() + 1
		maxTs = max(maxTs, h.maxTimestamp)
		records += int64(h.recordCount)
	}
	if err := l.commit(batches, hs, overlay, next, maxTs, records, now); err != nil {
		return AppendResult{}, err
	}
	return AppendResult{BaseOffset: hs[0].baseOffset, LastOffset: next - 1, MaxTimestamp: maxTs, LogStartOffset: l.start.Load()}, nil
}
