package partlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transaction markers: the control record's key is version int16 (0) |
// type int16, its value version int16 (0) | coordinatorEpoch int32 (Kafka's
// EndTransactionMarker). Frozen.
const (
	markerAbort  = 0
	markerCommit = 1

	// controlPeek is how many bytes of a batch scanSegment reads for its
	// header: enough for a control batch's marker record too.
	controlPeek = batchHeaderSize + 32
)

// parseControl decodes the marker record of the control batch b (header
// h, len(b) possibly short of h.size). ok is false when the bytes at hand do
// not hold a well-formed marker.
func parseControl(b []byte, h batchHeader) (typ int16, coordEpoch int32, ok bool) {
	if int64(len(b)) > h.size {
		b = b[:h.size]
	}
	if len(b) <= batchHeaderSize || h.attributes&attrCodecMask != 0 {
		return 0, 0, false
	}
	r, _, err := parseRecord(b[batchHeaderSize:])
	if err != nil || len(r.key) != 4 || binary.BigEndian.Uint16(r.key) != 0 {
		return 0, 0, false
	}
	typ = int16(binary.BigEndian.Uint16(r.key[2:]))
	if typ != markerAbort && typ != markerCommit {
		return 0, 0, false
	}
	v := markerValue(r)
	if len(v) < 6 {
		return 0, 0, false
	}
	return typ, int32(binary.BigEndian.Uint32(v[2:])), true
}

// markerValue returns the value bytes of a parsed record (parseRecord keeps
// only whether it is null).
func markerValue(r record) []byte {
	var rec kmsg.Record
	if err := rec.ReadFrom(r.raw); err != nil {
		return nil
	}
	return rec.Value
}

// completedTxn is a transaction a marker ended: the producer, the first
// offset of its data (the marker's own offset for an empty one), the
// marker's offset, whether it aborted, and the last stable offset right
// after it (the first offset of another producer's ongoing transaction,
// else the offset after the marker), as Kafka's CompletedTxn.
type completedTxn struct {
	producerID  int64
	first, last int64
	abort       bool
	lso         int64
}

// AbortedTxn is an aborted transaction as Fetch reports it: the producer and
// the first offset of its data. LastOffset is its ABORT marker's offset.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
	// LastStableOffset after the abort (the .txnindex field).
	LastStableOffset int64
}

// checkMarker judges a marker (control batch) for producer e on the leader:
// an older producer epoch is fenced, and so is a coordinator epoch older
// than the last marker's (a deposed coordinator).
func checkMarker(e *producerEntry, h batchHeader) error {
	switch {
	case e == nil:
		return nil
	case h.producerEpoch < e.epoch:
		return fmt.Errorf("%w: marker of producer %d epoch %d, current %d", ErrInvalidProducerEpoch, h.producerID, h.producerEpoch, e.epoch)
	case h.control && h.coordinatorEpoch < e.coordEpoch:
		return fmt.Errorf("%w: marker of producer %d from coordinator epoch %d, last %d", ErrTransactionCoordinatorFenced,
			h.producerID, h.coordinatorEpoch, e.coordEpoch)
	}
	return nil
}

// checkTxnData judges a data batch of a producer the log knows: while its
// transaction is ongoing every batch of the same epoch must be
// transactional (Kafka's INVALID_TXN_STATE).
func checkTxnData(e *producerEntry, h batchHeader) error {
	if e.txnFirst >= 0 && !h.transactional() && h.producerEpoch == e.epoch {
		return fmt.Errorf("%w: producer %d has a transaction ongoing since offset %d, got a non-transactional batch",
			ErrInvalidTxnState, h.producerID, e.txnFirst)
	}
	return nil
}

// checkClientBatch refuses what only the broker may write: control batches,
// and transactional batches without a producer id.
func checkClientBatch(h batchHeader) error {
	switch {
	case h.isControl():
		return fmt.Errorf("%w: control batches are written by the transaction coordinator only", ErrInvalidRecord)
	case h.transactional() && h.producerID < 0:
		return fmt.Errorf("%w: a transactional batch without a producer id", ErrInvalidRecord)
	}
	return nil
}

// updateTxnMarker applies the marker h to e (already in dst): it ends the
// ongoing transaction, if any, and takes the marker's epochs.
func updateTxnMarker(dst map[int64]*producerEntry, src *producerState, e *producerEntry, h batchHeader) (completedTxn, bool) {
	if h.producerEpoch > e.epoch {
		e.epoch, e.batches = h.producerEpoch, e.batches[:0]
	}
	if !h.control {
		return completedTxn{}, false // unreadable marker: nothing known to complete
	}
	e.coordEpoch = h.coordinatorEpoch
	first := e.txnFirst
	if first < 0 {
		first = h.baseOffset
	}
	e.txnFirst = -1
	d := completedTxn{producerID: h.producerID, first: first, last: h.baseOffset, abort: h.markerType == markerAbort,
		lso: h.baseOffset + 1}
	for pid, o := range dst {
		if pid != h.producerID && o.txnFirst >= 0 {
			d.lso = min(d.lso, o.txnFirst)
		}
	}
	for pid, first := range src.ongoing {
		if _, over := dst[pid]; !over && pid != h.producerID {
			d.lso = min(d.lso, first)
		}
	}
	return d, true
}

// firstUnstable is the smallest first offset of an ongoing transaction, -1
// when there is none.
func (ps *producerState) firstUnstable() int64 {
	fu := int64(-1)
	for _, first := range ps.ongoing {
		if fu < 0 || first < fu {
			fu = first
		}
	}
	return fu
}

// publishTxn makes the producer state's first unstable offset visible to
// readers; the caller holds l.mu.
func (l *Log) publishTxn() {
	l.firstUnstable.Store(l.producers.firstUnstable())
}

// txnSpan is a completed transaction's first offset and marker offset.
type txnSpan struct{ first, last int64 }

// LastStableOffset is Kafka's LSO for the high watermark hw: the first
// offset of the oldest transaction that is ongoing or whose marker is at
// or past hw (not yet in every in-sync replica), or hw if that is lower or
// there is none. read_committed consumers read below it, so they never
// see a transaction as ended that a new leader may not have ended. hw must
// be the partition's high watermark (or lower): completed transactions
// below it are forgotten.
func (l *Log) LastStableOffset(hw int64) int64 {
	lso := hw
	if fu := l.firstUnstable.Load(); fu >= 0 && fu < lso {
		lso = fu
	}
	l.unrepMu.Lock()
	defer l.unrepMu.Unlock()
	i := sort.Search(len(l.unreplicated), func(i int) bool { return l.unreplicated[i].last >= hw })
	if i > 0 {
		l.unreplicated = append(l.unreplicated[:0], l.unreplicated[i:]...)
	}
	for _, s := range l.unreplicated {
		lso = min(lso, s.first)
	}
	return lso
}

// FirstUnstableOffset is the first offset of the oldest ongoing transaction,
// -1 when none is.
func (l *Log) FirstUnstableOffset() int64 { return l.firstUnstable.Load() }

// AppendMarker appends a transaction marker (a control batch, Kafka's
// EndTransactionMarker) for producerID at producerEpoch, written by the
// coordinator with coordinatorEpoch, stamped with leaderEpoch: COMMIT when
// commit is set, else ABORT. It ends the producer's ongoing transaction;
// an ABORT adds it to the aborted-transaction index. An epoch older than the
// producer's gives ErrInvalidProducerEpoch, a coordinator epoch older than
// that of the producer's last marker ErrTransactionCoordinatorFenced;
// nothing is written then. A marker for a producer without an ongoing
// transaction is written too (an empty transaction), as in Kafka.
func (l *Log) AppendMarker(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, leaderEpoch int32) (AppendResult, error) {
	typ := int16(markerAbort)
	if commit {
		typ = markerCommit
	}
	b := markerBatch(producerID, producerEpoch, coordinatorEpoch, typ, leaderEpoch, l.cfg.Now().UnixMilli())
	return l.appendBatches(b, true)
}

// markerBatch encodes a control batch holding one marker record.
func markerBatch(producerID int64, producerEpoch int16, coordinatorEpoch int32, typ int16, leaderEpoch int32, nowMs int64) []byte {
	rec := kmsg.Record{
		Key:   binary.BigEndian.AppendUint16([]byte{0, 0}, uint16(typ)),
		Value: binary.BigEndian.AppendUint32([]byte{0, 0}, uint32(coordinatorEpoch)),
	}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // the length varint of 0 is one byte
	recBytes := rec.AppendTo(nil)
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: leaderEpoch,
		Magic:                batchMagic,
		Attributes:           attrTransactional | attrControl,
		FirstTimestamp:       nowMs,
		MaxTimestamp:         nowMs,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		FirstSequence:        -1,
		NumRecords:           1,
		Records:              recBytes,
	}
	rb.Length = int32(batchHeaderSize - batchLogOverhead + len(recBytes))
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// recordTxns adds the aborted ones among done to the index, and every
// one to the transactions the high watermark has not passed yet; the
// caller holds l.mu.
func (l *Log) recordTxns(done []completedTxn) {
	l.unrepMu.Lock()
	for _, d := range done {
		l.unreplicated = append(l.unreplicated, txnSpan{d.first, d.last})
	}
	l.unrepMu.Unlock()
	l.txnMu.Lock()
	defer l.txnMu.Unlock()
	for _, d := range done {
		if d.abort {
			l.aborted = append(l.aborted, AbortedTxn{ProducerID: d.producerID, FirstOffset: d.first, LastOffset: d.last, LastStableOffset: d.lso})
		}
	}
}

// dropAbortedFrom forgets aborted transactions whose marker is at or past
// off (a truncation, or recovery about to replay them).
func (l *Log) dropAbortedFrom(off int64) {
	l.unrepMu.Lock()
	j := sort.Search(len(l.unreplicated), func(i int) bool { return l.unreplicated[i].last >= off })
	l.unreplicated = l.unreplicated[:j:j]
	l.unrepMu.Unlock()
	l.txnMu.Lock()
	defer l.txnMu.Unlock()
	i := sort.Search(len(l.aborted), func(i int) bool { return l.aborted[i].LastOffset >= off })
	l.aborted = l.aborted[:i:i]
}

// pruneAborted forgets aborted transactions whose marker is below the first
// segment (retention or DeleteRecords deleted it, with its .txnindex).
func (l *Log) pruneAborted() {
	base := (*l.segs.Load())[0].base
	l.txnMu.Lock()
	defer l.txnMu.Unlock()
	i := sort.Search(len(l.aborted), func(i int) bool { return l.aborted[i].LastOffset >= base })
	if i > 0 {
		l.aborted = append([]AbortedTxn(nil), l.aborted[i:]...)
	}
}

// abortedIn returns a copy of the aborted transactions whose markers lie in
// [lo, hi): those of the segment with base lo when hi is the next base.
func (l *Log) abortedIn(lo, hi int64) []AbortedTxn {
	l.txnMu.RLock()
	defer l.txnMu.RUnlock()
	i := sort.Search(len(l.aborted), func(i int) bool { return l.aborted[i].LastOffset >= lo })
	j := sort.Search(len(l.aborted), func(i int) bool { return l.aborted[i].LastOffset >= hi })
	return append([]AbortedTxn(nil), l.aborted[i:j]...)
}

// AbortedTransactions returns the aborted transactions that overlap the
// offsets [fetchOffset, upperBound): marker at or after fetchOffset and
// first offset below upperBound, oldest marker first (Kafka's
// collectAbortedTxns, for a read_committed Fetch).
func (l *Log) AbortedTransactions(fetchOffset, upperBound int64) []AbortedTxn {
	l.txnMu.RLock()
	defer l.txnMu.RUnlock()
	var out []AbortedTxn
	i := sort.Search(len(l.aborted), func(i int) bool { return l.aborted[i].LastOffset >= fetchOffset })
	for _, a := range l.aborted[i:] {
		if a.FirstOffset < upperBound {
			out = append(out, a)
		}
		// Every later transaction was ongoing at this marker, or began
		// after it, so starts at or after its last stable offset.
		if a.LastStableOffset >= upperBound {
			break
		}
	}
	return out
}

// ProducerInfo is one active producer of the partition (DescribeProducers).
type ProducerInfo struct {
	ProducerID       int64
	ProducerEpoch    int16
	LastSequence     int32 // -1: none
	LastTimestamp    int64 // max timestamp of its last batch, -1: none
	CoordinatorEpoch int32 // of its last marker, -1: none
	TxnStartOffset   int64 // first offset of its ongoing transaction, -1: none
}

// Producers returns the producers the log remembers, by producer id.
func (l *Log) Producers() []ProducerInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	nowMs := l.cfg.Now().UnixMilli()
	out := make([]ProducerInfo, 0, len(l.producers.m))
	for pid := range l.producers.m {
		e := l.producers.lookup(pid, nowMs)
		if e == nil {
			continue
		}
		p := ProducerInfo{ProducerID: pid, ProducerEpoch: e.epoch, LastSequence: -1, LastTimestamp: -1,
			CoordinatorEpoch: e.coordEpoch, TxnStartOffset: e.txnFirst}
		if n := len(e.batches); n > 0 {
			p.LastSequence, p.LastTimestamp = e.batches[n-1].lastSeq, e.batches[n-1].maxTs
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// OngoingTxn reports whether producer pid has a transaction ongoing in the
// log: data appended and no marker yet, at whatever epoch. The leader asks
// the transaction coordinator to verify a transactional batch only when
// there is none (KIP-890), as Kafka's producer state does.
func (l *Log) OngoingTxn(pid int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.producers.lookup(pid, l.cfg.Now().UnixMilli())
	return e != nil && e.txnFirst >= 0
}
