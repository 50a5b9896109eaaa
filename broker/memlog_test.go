package broker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/broker/partlog"
)

// memLog is an in-memory partition.Log for tests: same contract as
// broker/partlog, no files.
type memLog struct {
	mu        sync.Mutex
	batches   []memBatch
	start     int64
	end       int64
	closed    bool
	producers map[int64]*memProducer
	failNext  error // returned once by the next Append, for fault tests
}

type memBatch struct {
	base, last, maxTS int64
	data              []byte
}

type memProducer struct {
	epoch   int16
	lastSeq int32
	recent  []memSeq
}

type memSeq struct {
	first, last int32
	base, end   int64
}

func newMemLog() *memLog { return &memLog{producers: map[int64]*memProducer{}} }

var crc32c = crc32.MakeTable(crc32.Castagnoli)

func (l *memLog) Append(batch []byte) (partition.AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return partition.AppendResult{}, partlog.ErrClosed
	}
	if err := l.failNext; err != nil {
		l.failNext = nil
		return partition.AppendResult{}, err
	}
	var infos []batchInfo
	if err := scanBatches(batch, func(b batchInfo) { infos = append(infos, b) }); err != nil {
		return partition.AppendResult{}, fmt.Errorf("%w: %v", partlog.ErrCorruptBatch, err)
	}
	// Validate everything before writing anything.
	off := 0
	for _, in := range infos {
		b := batch[off : off+in.size]
		if in.magic != currentMagic || crc32.Checksum(b[21:], crc32c) != binary.BigEndian.Uint32(b[17:]) {
			return partition.AppendResult{}, fmt.Errorf("%w: bad magic or CRC", partlog.ErrCorruptBatch)
		}
		off += in.size
	}
	res := partition.AppendResult{BaseOffset: -1, LogStartOffset: l.start}
	off = 0
	for _, in := range infos {
		b := batch[off : off+in.size]
		off += in.size
		lastDelta := int64(int32(binary.BigEndian.Uint32(b[23:])))
		pid := int64(binary.BigEndian.Uint64(b[batchProducerIDOff:]))
		epoch := int16(binary.BigEndian.Uint16(b[batchProducerEpochOf:]))
		seq := int32(binary.BigEndian.Uint32(b[53:]))
		if pid >= 0 {
			p := l.producers[pid]
			switch {
			case p == nil || epoch > p.epoch:
				p = &memProducer{epoch: epoch, lastSeq: seq - 1}
				l.producers[pid] = p
			case epoch < p.epoch:
				return res, partlog.ErrInvalidProducerEpoch
			}
			dup := false
			for _, r := range p.recent {
				if r.first == seq {
					res = partition.AppendResult{BaseOffset: r.base, LastOffset: r.end, MaxTimestamp: -1, LogStartOffset: l.start, Duplicate: true}
					dup = true
				}
			}
			if dup {
				continue
			}
			if seq != p.lastSeq+1 {
				return res, partlog.ErrOutOfOrderSequence
			}
			p.lastSeq = seq + int32(lastDelta)
			p.recent = append(p.recent, memSeq{first: seq, last: p.lastSeq, base: l.end, end: l.end + lastDelta})
			if len(p.recent) > 5 {
				p.recent = p.recent[1:]
			}
		}
		cp := bytes.Clone(b)
		binary.BigEndian.PutUint64(cp, uint64(l.end))
		copy(b, cp[:8])
		maxTS := int64(binary.BigEndian.Uint64(b[35:]))
		l.batches = append(l.batches, memBatch{base: l.end, last: l.end + lastDelta, maxTS: maxTS, data: cp})
		if res.BaseOffset < 0 {
			res.BaseOffset = l.end
		}
		res.LastOffset = l.end + lastDelta
		res.MaxTimestamp = max(res.MaxTimestamp, maxTS)
		l.end += lastDelta + 1
	}
	return res, nil
}

type memView struct{ data []byte }

func (v *memView) Len() int64             { return int64(len(v.data)) }
func (v *memView) Bytes() ([]byte, error) { return v.data, nil }
func (v *memView) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(v.data)
	return int64(n), err
}
func (v *memView) Release() {}

func (l *memLog) Read(offset int64, maxBytes int) (partition.RecordView, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, partlog.ErrClosed
	}
	if offset < l.start {
		return nil, partlog.ErrOffsetOutOfRange
	}
	var out []byte
	for _, b := range l.batches {
		if b.last < offset {
			continue
		}
		if len(out) > 0 && len(out)+len(b.data) > maxBytes {
			break
		}
		out = append(out, b.data...)
	}
	return &memView{data: out}, nil
}

func (l *memLog) StartOffset() int64 { l.mu.Lock(); defer l.mu.Unlock(); return l.start }
func (l *memLog) EndOffset() int64   { l.mu.Lock(); defer l.mu.Unlock(); return l.end }
func (l *memLog) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, b := range l.batches {
		n += int64(len(b.data))
	}
	return n
}
func (l *memLog) Flush() error                 { return nil }
func (l *memLog) ApplyRetention() (int, error) { return 0, nil }
func (l *memLog) OffsetForTimestamp(ts int64) (int64, int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.batches {
		if b.maxTS >= ts {
			return b.base, b.maxTS, true
		}
	}
	return 0, 0, false
}
func (l *memLog) Close() error  { l.mu.Lock(); defer l.mu.Unlock(); l.closed = true; return nil }
func (l *memLog) Delete() error { return l.Close() }

// The replication methods: a memLog serves single-broker tests, where a
// partition is never a follower, so these are kept simple but honest.

func (l *memLog) AppendReplica(batches []byte) (partition.AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	res := partition.AppendResult{BaseOffset: -1, LogStartOffset: l.start}
	for len(batches) >= batchHeaderSize {
		size := int(binary.BigEndian.Uint32(batches[batchLengthOffset:])) + batchOverheadNoLen
		b := bytes.Clone(batches[:size])
		batches = batches[size:]
		base := int64(binary.BigEndian.Uint64(b))
		if base != l.end {
			return res, fmt.Errorf("memlog: replica batch at %d, log ends at %d", base, l.end)
		}
		last := base + int64(int32(binary.BigEndian.Uint32(b[23:])))
		l.batches = append(l.batches, memBatch{base: base, last: last, maxTS: int64(binary.BigEndian.Uint64(b[35:])), data: b})
		if res.BaseOffset < 0 {
			res.BaseOffset = base
		}
		res.LastOffset = last
		l.end = last + 1
	}
	return res, nil
}

func (l *memLog) ReadBelow(offset int64, maxBytes int, limit int64) (partition.RecordView, error) {
	v, err := l.Read(offset, maxBytes)
	if err != nil {
		return nil, err
	}
	data := v.(*memView).data
	n := 0
	for n < len(data) {
		size := int(binary.BigEndian.Uint32(data[n+batchLengthOffset:])) + batchOverheadNoLen
		last := int64(binary.BigEndian.Uint64(data[n:])) + int64(int32(binary.BigEndian.Uint32(data[n+23:])))
		if last >= limit {
			break
		}
		n += size
	}
	return &memView{data: data[:n]}, nil
}

func (l *memLog) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	keep := l.batches[:0]
	for _, b := range l.batches {
		if b.base < offset {
			keep = append(keep, b)
		}
	}
	l.batches = keep
	l.end = offset
	return nil
}

func (l *memLog) epochs() (out [][2]int64) {
	for _, b := range l.batches {
		e := int64(int32(binary.BigEndian.Uint32(b.data[batchLeaderEpochOffset:])))
		if e >= 0 && (len(out) == 0 || e > out[len(out)-1][0]) {
			out = append(out, [2]int64{e, b.base})
		}
	}
	return out
}

func (l *memLog) LatestEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	es := l.epochs()
	if len(es) == 0 {
		return -1
	}
	return int32(es[len(es)-1][0])
}

func (l *memLog) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	es := l.epochs()
	if len(es) == 0 || int64(epoch) < es[0][0] {
		return -1, -1
	}
	for i := len(es) - 1; i >= 0; i-- {
		if es[i][0] <= int64(epoch) {
			if i == len(es)-1 {
				return int32(es[i][0]), l.end
			}
			return int32(es[i][0]), es[i+1][1]
		}
	}
	return -1, -1
}

func (l *memLog) TruncateFullyAndStartAt(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batches, l.start, l.end = nil, offset, offset
	return nil
}
