package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/partition"
)

// fetchTarget is a requested partition: its log when served here, else
// the error code to answer.
type fetchTarget struct {
	p    *partition.Replica
	code int16
}

// maxFetchWait caps a client's max_wait so that a silly value cannot pin a
// connection for hours.
const maxFetchWait = 5 * time.Minute

// fetchSlot is one partition of a Fetch response whose records come from a
// log view.
type fetchSlot struct {
	topic, part int
	view        partition.RecordView
	topicName   string
}

// fetchReply is a Fetch response whose record sets are streamed from the
// log at write time.
type fetchReply struct {
	b     *Broker
	resp  *kmsg.FetchResponse
	slots []fetchSlot
}

// handleFetch serves a Fetch under the client quotas (clientquota.go): a
// consumer's response is capped at its consumer_byte_rate's window and
// charged to it.
func (b *Broker) handleFetch(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.FetchRequest)
	if limit := b.quotas.fetchCap(r); limit >= 0 && req.ReplicaID < 0 && (req.MaxBytes < 0 || int64(req.MaxBytes) > limit) {
		req.MaxBytes = int32(min(limit, 1<<31-1))
	}
	rep, err := b.serveFetch(ctx, r)
	if f, ok := rep.(*fetchReply); ok && err == nil {
		b.throttleFetch(r, f)
	}
	return rep, err
}

// serveFetch reads every requested partition and, until min_bytes are
// available or max_wait passes, waits for appends to any of them.
func (b *Broker) serveFetch(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.FetchRequest)
	if req.Version >= 7 {
		// Sessions are never handed out (SessionID 0 in every response), so
		// a client may only send full fetches: epoch 0 (asking for a
		// session, refused) or -1 (sessionless).
		code := int16(0)
		switch {
		case req.SessionID != 0:
			code = kerr.FetchSessionIDNotFound.Code
		case req.SessionEpoch != 0 && req.SessionEpoch != -1:
			code = kerr.InvalidFetchSessionEpoch.Code
		}
		if code != 0 {
			resp := req.ResponseKind().(*kmsg.FetchResponse)
			resp.SetVersion(req.Version)
			resp.ErrorCode = code
			return &fetchReply{b: b, resp: resp}, nil
		}
	}

	parts := make([][]fetchTarget, len(req.Topics))
	w := partition.NewWaiter()
	var snap *cluster.Snapshot // read only when a partition is not served here
	// Followers need ClusterAction, consumers Read on each topic; either
	// refused, the partitions answer TOPIC_AUTHORIZATION_FAILED, as Kafka's.
	replica := req.ReplicaID >= 0
	replicaOK := !replica || b.authorizeCluster(r, acl.OpClusterAction)
	for i, rt := range req.Topics {
		parts[i] = make([]fetchTarget, len(rt.Partitions))
		readable := replicaOK && (replica || b.authorizeTopic(r, acl.OpRead, rt.Topic))
		for j, rp := range rt.Partitions {
			if !readable {
				parts[i][j].code = errTopicAuth.Code
				continue
			}
			p := b.partitions.Leader(rt.Topic, rp.Partition)
			if p == nil {
				if snap == nil {
					s := b.metadata()
					snap = &s
				}
				parts[i][j].code = unservedCode(*snap, rt.Topic, rp.Partition)
				continue
			}
			if code := fetchEpochCode(p, rp.CurrentLeaderEpoch); code != 0 {
				parts[i][j].code = code
				continue
			}
			if req.ReplicaID >= 0 && !b.partitions.FollowerFetched(p, req.ReplicaID, rp.FetchOffset, rp.LogStartOffset) {
				// Not a replica of this partition (or no longer led here).
				parts[i][j].code = kerr.NotLeaderForPartition.Code
				continue
			}
			parts[i][j].p = p
			// Registered before the first read, so no append between the
			// read and the wait goes unnoticed.
			p.AddWaiter(w)
			defer p.RemoveWaiter(w)
		}
	}

	wait := min(time.Duration(req.MaxWaitMillis)*time.Millisecond, maxFetchWait)
	deadline := time.Now().Add(wait)
	var timer *time.Timer
	for {
		rep, readable, hadError := b.readFetch(req, parts)
		left := time.Until(deadline)
		if readable >= int64(req.MinBytes) || hadError || left <= 0 || ctx.Err() != nil {
			return rep, nil
		}
		rep.release()
		if timer == nil {
			timer = time.NewTimer(left)
			defer timer.Stop()
		}
		waitStart := time.Now()
		select {
		case <-w.C():
		case <-timer.C:
			r.waited += time.Since(waitStart)
			// One last read, so data that landed just now is not missed.
			rep, _, _ := b.readFetch(req, parts)
			return rep, nil
		case <-ctx.Done():
		}
		r.waited += time.Since(waitStart)
	}
}

// readFetch builds the response from the logs' current state. It returns
// the bytes readable and whether any partition had an error.
func (b *Broker) readFetch(req *kmsg.FetchRequest, parts [][]fetchTarget) (*fetchReply, int64, bool) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.SetVersion(req.Version)
	rep := &fetchReply{b: b, resp: resp}
	remaining := int64(req.MaxBytes)
	if req.Version < 3 || remaining < 0 {
		remaining = int64(b.cfg.SocketRequestMaxBytes)
	}
	// KIP-74: the first partition with data returns at least one whole
	// batch even past the limits, so that a consumer can always progress.
	minOne := true
	var readable int64
	hadError := false
	for i, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic = rt.Topic
		for j, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			// Empty, not null: librdkafka rejects a null record set
			// ("invalid MessageSetSize -1"), and Kafka never sends one.
			sp.RecordBatches = []byte{}
			p := parts[i][j].p
			if p == nil {
				sp.ErrorCode = parts[i][j].code
				hadError = true
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			// A consumer reads only what every in-sync replica has (below
			// the high watermark); a follower reads all there is.
			hw := p.HighWatermark()
			end := p.Log().EndOffset()
			visible := end
			if req.ReplicaID < 0 {
				visible = min(hw, end)
			}
			committed := req.ReplicaID < 0 && req.IsolationLevel == 1
			if committed {
				// read_committed: nothing at or past the last stable offset.
				visible = p.LastStable(visible)
			}
			start := p.Log().StartOffset()
			limit := min(int64(rp.PartitionMaxBytes), remaining)
			throttled := req.ReplicaID >= 0 && b.partitions.LeaderThrottled(p, req.ReplicaID)
			if throttled {
				// Over the leader's throttle: nothing for this follower
				// until the bucket refills (throttle.go).
				if allow := b.throttle.allowance(true); allow >= 0 {
					limit = min(limit, allow)
					if allow == 0 {
						rp.FetchOffset = visible
					}
				}
			}
			switch {
			case rp.FetchOffset > end || rp.FetchOffset < start:
				sp.ErrorCode = kerr.OffsetOutOfRange.Code
			case rp.FetchOffset >= visible || (limit <= 0 && !minOne):
			default:
				var v partition.RecordView
				var err error
				if visible == end && p.SelfOnly() {
					v, err = p.Log().Read(rp.FetchOffset, int(max(limit, 0)))
				} else {
					v, err = p.Log().ReadBelow(rp.FetchOffset, int(max(limit, 0)), visible)
				}
				switch {
				case err != nil:
					sp.ErrorCode = partition.ErrorCode(err)
				case v.Len() == 0 || (!minOne && v.Len() > limit):
					v.Release()
				default:
					rep.slots = append(rep.slots, fetchSlot{topic: i, part: len(st.Partitions), view: v, topicName: rt.Topic})
					if throttled {
						b.throttle.record(true, v.Len())
					}
					remaining -= v.Len()
					readable += v.Len()
					minOne = false
				}
			}
			if sp.ErrorCode == kerr.OffsetOutOfRange.Code {
				// Where the valid range lies, as Kafka's leader answers it
				// too: a follower below the log start (a new or emptied
				// replica, or one that retention or DeleteRecords left
				// behind) starts over at it without another round trip.
				sp.HighWatermark = p.HighWatermark()
				sp.LastStableOffset = p.LastStable(sp.HighWatermark)
				sp.LogStartOffset = p.Log().StartOffset()
			}
			if sp.ErrorCode != 0 {
				hadError = true
			} else {
				// Read after the log read: every offset returned to a
				// consumer is below it.
				sp.HighWatermark = p.HighWatermark()
				sp.LastStableOffset = p.LastStable(sp.HighWatermark)
				sp.LogStartOffset = p.Log().StartOffset()
				if committed {
					sp.AbortedTransactions = abortedFor(p, rp.FetchOffset, visible)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return rep, readable, hadError
}

func (f *fetchReply) release() {
	for _, s := range f.slots {
		s.view.Release()
	}
	f.slots = nil
}

// markerLen is the size of the placeholder record set (frozen: the length
// prefixes checked below assume it).
const markerLen = 8

// writeFrame encodes the response with a random marker as each streamed
// partition's records, then writes the encoded bytes around the markers
// and the log views in their place, fixing the length prefixes and the
// frame size. Without slots, or when a marker is not found exactly once,
// the records are copied into the response instead.
func (f *fetchReply) writeFrame(w *connWriter, r *request) (int64, error) {
	defer f.release()
	if len(f.slots) == 0 {
		return kmsgReply{f.resp}.writeFrame(w, r)
	}
	markers := make([][]byte, len(f.slots))
	for i, s := range f.slots {
		m := binary.BigEndian.AppendUint64(nil, rand.Uint64())
		markers[i] = m
		f.resp.Topics[s.topic].Partitions[s.part].RecordBatches = m
	}
	buf := w.scratch[:0]
	buf = append(buf, 0, 0, 0, 0)
	buf = kbin.AppendInt32(buf, r.corr)
	if responseHeaderFlexible(r) {
		buf = append(buf, 0)
	}
	buf = f.resp.AppendTo(buf)
	w.scratch = buf

	flexible := f.resp.IsFlexible()
	var oldPrefix []byte
	if flexible {
		oldPrefix = kbin.AppendUvarint(nil, markerLen+1)
	} else {
		oldPrefix = kbin.AppendInt32(nil, markerLen)
	}
	type cut struct{ from, to int } // encoded bytes replaced by a view
	cuts := make([]cut, len(f.slots))
	from := 0
	for i, m := range markers {
		at := bytes.Index(buf[from:], m)
		if at < 0 || bytes.Count(buf, m) != 1 || from+at < len(oldPrefix) ||
			!bytes.Equal(buf[from+at-len(oldPrefix):from+at], oldPrefix) {
			return f.writeCopied(w, r)
		}
		at += from
		cuts[i] = cut{from: at - len(oldPrefix), to: at + markerLen}
		from = at + markerLen
	}

	total := int64(len(buf) - 4)
	for i, s := range f.slots {
		total -= int64(cuts[i].to - cuts[i].from)
		total += int64(len(recordsPrefix(flexible, s.view.Len()))) + s.view.Len()
	}
	if total > 1<<31-1 {
		return 0, fmt.Errorf("fetch response of %d bytes does not fit a frame", total)
	}
	binary.BigEndian.PutUint32(buf, uint32(total))

	var written int64
	prev := 0
	for i, s := range f.slots {
		chunk := append(buf[prev:cuts[i].from:cuts[i].from], recordsPrefix(flexible, s.view.Len())...)
		n, err := w.conn.Write(chunk)
		written += int64(n)
		if err != nil {
			return written, err
		}
		vn, zeroCopy, err := sendView(s.view, w.conn)
		written += vn
		if zeroCopy {
			f.b.metrics.sendfileBytes.Add(float64(vn))
		} else {
			f.b.metrics.copiedBytes.Add(float64(vn))
		}
		if err != nil {
			return written, err
		}
		if vn != s.view.Len() {
			return written, fmt.Errorf("log view wrote %d of %d bytes", vn, s.view.Len())
		}
		f.b.metrics.bytesOut.WithLabelValues(s.topicName).Add(float64(vn))
		prev = cuts[i].to
	}
	n, err := w.conn.Write(buf[prev:])
	written += int64(n)
	return written, err
}

// zeroCopySender is a partition.RecordView that tells whether it used sendfile, as
// broker/partlog's View does.
type zeroCopySender interface {
	SendTo(w io.Writer) (n int64, zeroCopy bool, err error)
}

// sendView writes v to w; zeroCopy is false for views that cannot say (the
// bytes may have been copied, and the metric must not claim otherwise).
func sendView(v partition.RecordView, w io.Writer) (n int64, zeroCopy bool, err error) {
	if zc, ok := v.(zeroCopySender); ok {
		return zc.SendTo(w)
	}
	n, err = v.WriteTo(w)
	return n, false, err
}

// recordsPrefix is the length prefix of a record set of n bytes: nullable
// bytes (int32) or, in flexible versions, compact nullable bytes
// (uvarint n+1).
func recordsPrefix(flexible bool, n int64) []byte {
	if flexible {
		return kbin.AppendUvarint(nil, uint32(n+1))
	}
	return kbin.AppendInt32(nil, int32(n))
}

// writeCopied is the fallback: record bytes are copied into the response.
func (f *fetchReply) writeCopied(w *connWriter, r *request) (int64, error) {
	for _, s := range f.slots {
		data, err := s.view.Bytes()
		if err != nil {
			return 0, fmt.Errorf("reading log view: %w", err)
		}
		f.resp.Topics[s.topic].Partitions[s.part].RecordBatches = data
		f.b.metrics.bytesOut.WithLabelValues(s.topicName).Add(float64(len(data)))
		f.b.metrics.copiedBytes.Add(float64(len(data)))
	}
	return kmsgReply{f.resp}.writeFrame(w, r)
}

// fetchEpochCode checks a request's current_leader_epoch (-1: not given)
// against the epoch this leader serves under, as Kafka does (KIP-320): an
// older one means the client's metadata is stale, a newer one ours.
func fetchEpochCode(p *partition.Replica, epoch int32) int16 {
	if epoch < 0 {
		return 0
	}
	switch mine := p.LeaderEpoch(); {
	case epoch < mine:
		return kerr.FencedLeaderEpoch.Code
	case epoch > mine:
		return kerr.UnknownLeaderEpoch.Code
	}
	return 0
}

// abortedFor lists the aborted transactions a read_committed consumer
// needs for records read from offset from up to upper (the last stable
// offset the read stopped at): possibly more than the batches returned
// hold, which consumers ignore. Empty, not null, as Kafka's.
func abortedFor(p *partition.Replica, from, upper int64) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	out := []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	t := p.TxnLog()
	if t == nil || from >= upper {
		return out
	}
	for _, a := range t.AbortedTransactions(from, upper) {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
		out = append(out, at)
	}
	return out
}
