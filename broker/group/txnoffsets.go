package group

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnLog is a Log that also appends transactional batches: the broker's
// offsets partitions. TxnOffsetCommit needs it.
type TxnLog interface {
	Log
	// AppendTxn writes the records as one transactional batch of the
	// producer (its transaction's marker, written later by the
	// transaction coordinator, commits or aborts them). An error wrapping
	// ErrProducerFenced means the producer's epoch is stale.
	AppendTxn(records []Record, producerID int64, producerEpoch int16) error
}

type txnMarker struct {
	producerID int64
	commit     bool
}

// replayed is a transactional offset read back: its value (nil for a
// tombstone) and its position in the log.
type replayed struct {
	v   *committed
	pos int64
}

// txnReplay collects, while loading, the transactional offsets of each
// producer until its marker.
type txnReplay map[int64]map[string]map[TopicPartition]replayed

func (t txnReplay) add(pid int64, group string, tp TopicPartition, v replayed) {
	if t[pid] == nil {
		t[pid] = map[string]map[TopicPartition]replayed{}
	}
	if t[pid][group] == nil {
		t[pid][group] = map[TopicPartition]replayed{}
	}
	t[pid][group][tp] = v
}

// drop forgets every producer's pending offset of group for tp: a plain
// tombstone deletes them too, as Kafka's replay does.
func (t txnReplay) drop(group string, tp TopicPartition) {
	for _, groups := range t {
		delete(groups[group], tp)
	}
}

// end applies (commit) or drops (abort) the producer's offsets; a
// committed one replaces only an offset appended before it.
func (t txnReplay) end(pid int64, commit bool, offsets map[string]map[TopicPartition]committed) {
	if commit {
		for g, offs := range t[pid] {
			for tp, r := range offs {
				if cur, ok := offsets[g][tp]; ok && cur.pos > r.pos {
					continue
				}
				if r.v == nil {
					delete(offsets[g], tp)
					continue
				}
				if offsets[g] == nil {
					offsets[g] = map[TopicPartition]committed{}
				}
				offsets[g][tp] = *r.v
			}
		}
	}
	delete(t, pid)
}

// installPendingLocked keeps the transactions still open at the end of the
// log as pending offsets of their groups; c.mu is held.
func (c *Coordinator) installPendingLocked(ps *offsetsPartition, t txnReplay) {
	for pid, groups := range t {
		for id, offs := range groups {
			g := ps.groups[id]
			if g == nil {
				g = c.newGroup(ps, id)
				ps.groups[id] = g
			}
			for tp, r := range offs {
				if r.v != nil {
					g.addPendingTxn(pid, tp, *r.v)
				}
			}
			if ps.txnGroups[pid] == nil {
				ps.txnGroups[pid] = map[string]bool{}
			}
			ps.txnGroups[pid][id] = true
		}
	}
}

func (g *group) addPendingTxn(pid int64, tp TopicPartition, o committed) {
	if g.pendingTxn == nil {
		g.pendingTxn = map[int64]map[TopicPartition]committed{}
	}
	if g.pendingTxn[pid] == nil {
		g.pendingTxn[pid] = map[TopicPartition]committed{}
	}
	g.pendingTxn[pid][tp] = o
}

// dropPendingTxn forgets every open transaction's offset for tp: a
// tombstone of tp (OffsetDelete, DeleteGroups) deletes them as well, as
// Kafka's coordinator replays one.
func (g *group) dropPendingTxn(tp TopicPartition) {
	for pid, offs := range g.pendingTxn {
		delete(offs, tp)
		if len(offs) == 0 {
			delete(g.pendingTxn, pid)
		}
	}
}

// hasPendingTxn reports whether an open transaction commits an offset
// for tp.
func (g *group) hasPendingTxn(tp TopicPartition) bool {
	for _, offs := range g.pendingTxn {
		if _, ok := offs[tp]; ok {
			return true
		}
	}
	return false
}

// TxnOffsetCommit handles a TxnOffsetCommit request: the offsets are
// appended to the group's offsets partition as a transactional batch of
// the producer and held pending until the transaction's marker (TxnMarker)
// makes them the group's committed offsets or drops them. From v3
// (KIP-447) a request naming a member is checked against the group as an
// OffsetCommit is: FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID,
// ILLEGAL_GENERATION. The caller has authorized it.
func (c *Coordinator) TxnOffsetCommit(_ context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	codes := make([][]int16, len(req.Topics))
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
	}
	all := func(code int16) {
		for i := range codes {
			for j := range codes[i] {
				if codes[i][j] == 0 {
					codes[i][j] = code
				}
			}
		}
	}
	defer func() {
		for i, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}()
	if req.Group == "" {
		all(kerr.InvalidGroupID.Code)
		return resp
	}
	g, ps, code := c.lookup(req.Group, true)
	if code != 0 {
		all(code)
		return resp
	}
	tl, ok := ps.log.(TxnLog)
	if !ok {
		all(kerr.UnsupportedForMessageFormat.Code)
		return resp
	}
	ps.writeMu.Lock()
	defer ps.writeMu.Unlock()
	g.mu.Lock()
	if code := g.txnCommitCheck(req); code != 0 {
		g.mu.Unlock()
		all(code)
		return resp
	}
	parts := commitParts(req.Topics, codes, req.Version >= 2,
		func(t kmsg.TxnOffsetCommitRequestTopic) (string, []kmsg.TxnOffsetCommitRequestTopicPartition) {
			return t.Topic, t.Partitions
		},
		func(p kmsg.TxnOffsetCommitRequestTopicPartition) (int32, int64, int32, *string) {
			return p.Partition, p.Offset, p.LeaderEpoch, p.Metadata
		})
	records, accept := c.commitRecords(req.Group, parts)
	g.mu.Unlock()
	if len(records) == 0 {
		return resp
	}
	if err := tl.AppendTxn(records, req.ProducerID, req.ProducerEpoch); err != nil {
		code := c.appendCode(err)
		if errors.Is(err, ErrProducerFenced) {
			code = kerr.ProducerFenced.Code
			if req.Version < 3 {
				code = kerr.InvalidProducerEpoch.Code
			}
		}
		all(code)
		return resp
	}
	pos := ps.nextPos()
	g.mu.Lock()
	for _, a := range accept {
		a.c.pos = pos
		g.addPendingTxn(req.ProducerID, a.tp, a.c)
	}
	g.mu.Unlock()
	if ps.txnGroups[req.ProducerID] == nil {
		ps.txnGroups[req.ProducerID] = map[string]bool{}
	}
	ps.txnGroups[req.ProducerID][req.Group] = true
	return resp
}

// txnCommitCheck is KIP-447's check of a transactional commit that names
// its member (v3+); one without a member or generation is not checked.
func (g *group) txnCommitCheck(req *kmsg.TxnOffsetCommitRequest) int16 {
	if g.state == stateDead {
		return g.deadCode
	}
	if req.Generation < 0 && req.MemberID == "" && req.InstanceID == nil {
		return 0
	}
	if g.cg != nil {
		return g.consumerCommitCheck(req.MemberID, req.Generation, req.Version, true)
	}
	if g.fenced(req.MemberID, req.InstanceID) {
		return kerr.FencedInstanceID.Code
	}
	m := g.members[req.MemberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case req.Generation != g.generation:
		return kerr.IllegalGeneration.Code
	}
	return 0
}

// TxnMarker applies a transaction marker written to offsets partition
// partition: the producer's pending offsets there become the groups'
// committed offsets (commit: each unless a plain OffsetCommit of the
// partition was appended after it, as Kafka keeps the record appended
// later) or are dropped (abort). The broker calls it
// once the marker is in the log.
func (c *Coordinator) TxnMarker(partition int32, producerID int64, _ int16, commit bool) {
	m := txnMarker{producerID: producerID, commit: commit}
	c.mu.Lock()
	part := c.parts.Get(partition)
	if part == nil {
		c.mu.Unlock()
		return
	}
	ps := part.Contents
	if !part.Loaded() {
		// load applies it: it installs and marks the partition loaded
		// under c.mu.
		ps.lateMarkers = append(ps.lateMarkers, m)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	ps.writeMu.Lock()
	defer ps.writeMu.Unlock()
	c.mu.Lock()
	if !part.Served() {
		c.mu.Unlock()
		return
	}
	groups := map[string]*group{}
	for id := range ps.txnGroups[producerID] {
		groups[id] = ps.groups[id]
	}
	c.mu.Unlock()
	c.applyMarker(ps, m, groups)
}

// applyMarker ends the producer's pending offsets in groups (ps's groups
// holding some); the caller holds ps.writeMu or, while loading, c.mu. It
// takes the groups' mu.
func (c *Coordinator) applyMarker(ps *offsetsPartition, m txnMarker, groups map[string]*group) {
	delete(ps.txnGroups, m.producerID)
	for id, g := range groups {
		if g == nil {
			continue
		}
		g.mu.Lock()
		offs := g.pendingTxn[m.producerID]
		delete(g.pendingTxn, m.producerID)
		var regs []RegistryOffset
		if m.commit {
			for tp, o := range offs {
				if cur, ok := g.offsets[tp.Topic][tp.Partition]; ok && cur.pos > o.pos {
					continue
				}
				g.setOffset(tp.Topic, tp.Partition, o)
				regs = append(regs, RegistryOffset{TopicPartition: tp, Offset: o.Offset})
			}
		}
		g.mu.Unlock()
		if c.registry != nil && len(regs) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), DefaultRegistryWriteTimeout)
			if err := c.registry.Store(ctx, id, regs); err != nil {
				c.cfg.Logger.Warn("writing committed offsets to the registry failed", "group", id, "err", err)
			}
			cancel()
		}
	}
}
