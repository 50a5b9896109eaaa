package partlog

import "sort"

// cleanTxns is one cleaning's view of the transactions (Kafka's
// CleanedTransactionMetadata): which transactional batches belong to
// aborted transactions, and which transactions still have data in the
// segments walked so far, to decide about their markers.
type cleanTxns struct {
	aborted map[int64][]AbortedTxn // by producer, by marker offset
	// seen: producers with a data batch of their current transaction
	// walked in this pass (reset at the producer's marker).
	seen map[int64]bool
	// dropped are the ABORT markers this pass removes (their
	// aborted-transaction entries go with them), by marker offset.
	dropped map[int64]bool
}

func (l *Log) newCleanTxns() *cleanTxns {
	t := &cleanTxns{aborted: map[int64][]AbortedTxn{}, seen: map[int64]bool{}, dropped: map[int64]bool{}}
	l.txnMu.RLock()
	for _, a := range l.aborted {
		t.aborted[a.ProducerID] = append(t.aborted[a.ProducerID], a)
	}
	l.txnMu.RUnlock()
	return t
}

// isAborted reports whether the transactional batch h belongs to an
// aborted transaction.
func (t *cleanTxns) isAborted(h batchHeader) bool {
	as := t.aborted[h.producerID]
	i := sort.Search(len(as), func(i int) bool { return as[i].LastOffset >= h.baseOffset })
	return i < len(as) && as[i].FirstOffset <= h.baseOffset
}

// dataBatch notes a transactional data batch walked; it returns whether
// the batch is aborted data, which the cleaner drops.
func (t *cleanTxns) dataBatch(h batchHeader) bool {
	t.seen[h.producerID] = true
	return t.isAborted(h)
}

// keepMarker decides about the marker h whose segment was last modified at
// segMs: it stays while data of its transaction were walked in this pass
// (a COMMIT's retained records need it, an ABORT's dropped batches may
// still be read by consumers that fetched them before), and for
// delete.retention.ms after that (horizon), as Kafka's cleaner keeps
// markers for as long as tombstones.
func (t *cleanTxns) keepMarker(h batchHeader, segMs, horizon int64) bool {
	hadData := t.seen[h.producerID]
	delete(t.seen, h.producerID)
	if hadData || !h.control || segMs >= horizon {
		return true
	}
	if h.markerType == markerAbort {
		t.dropped[h.baseOffset] = true
	}
	return false
}

// groupTxnIndex is the aborted-transaction index of a cleaned group: the
// entries of its segments minus those of the markers dropped.
func (l *Log) groupTxnIndex(t *cleanTxns, g segmentGroup) []AbortedTxn {
	var out []AbortedTxn
	for _, a := range l.abortedIn(g.segs[0].base, g.end) {
		if !t.dropped[a.LastOffset] {
			out = append(out, a)
		}
	}
	return out
}

// forgetDropped removes from memory the aborted transactions whose markers
// a swapped-in group no longer holds.
func (l *Log) forgetDropped(t *cleanTxns, g segmentGroup) {
	l.txnMu.Lock()
	defer l.txnMu.Unlock()
	out := l.aborted[:0:0]
	for _, a := range l.aborted {
		if a.LastOffset >= g.segs[0].base && a.LastOffset < g.end && t.dropped[a.LastOffset] {
			continue
		}
		out = append(out, a)
	}
	l.aborted = out
}
