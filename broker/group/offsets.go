package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit handles an OffsetCommit request. Accepted offsets are
// appended to the group's offsets partition in one batch before they are
// acknowledged, then written through to the registry (best effort).
func (c *Coordinator) OffsetCommit(_ context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	codes := make([][]int16, len(req.Topics))
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
	}
	all := func(code int16) {
		for i := range codes {
			for j := range codes[i] {
				codes[i][j] = code
			}
		}
	}
	defer func() {
		for i, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
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
	simple := req.Generation < 0 && req.MemberID == ""
	g, ps, code := c.lookup(req.Group, simple)
	switch {
	case code != 0:
		all(code)
		return resp
	case g == nil:
		// A commit of a generation this coordinator never saw.
		all(kerr.IllegalGeneration.Code)
		return resp
	}
	ps.writeMu.Lock()
	defer ps.writeMu.Unlock()
	g.mu.Lock()
	if code := g.commitCheck(req); code != 0 {
		g.mu.Unlock()
		all(code)
		return resp
	}
	parts := commitParts(req.Topics, codes, req.Version >= 6,
		func(t kmsg.OffsetCommitRequestTopic) (string, []kmsg.OffsetCommitRequestTopicPartition) {
			return t.Topic, t.Partitions
		},
		func(p kmsg.OffsetCommitRequestTopicPartition) (int32, int64, int32, *string) {
			return p.Partition, p.Offset, p.LeaderEpoch, p.Metadata
		})
	records, accept := c.commitRecords(req.Group, parts)
	g.mu.Unlock()
	if len(records) == 0 {
		return resp
	}
	if err := ps.log.Append(records); err != nil {
		code := c.appendCode(err)
		for i, t := range req.Topics {
			for j := range t.Partitions {
				if codes[i][j] == 0 {
					codes[i][j] = code
				}
			}
		}
		return resp
	}
	pos := ps.nextPos()
	g.mu.Lock()
	for _, a := range accept {
		a.c.pos = pos
		g.setOffset(a.tp.Topic, a.tp.Partition, a.c)
	}
	g.mu.Unlock()
	if c.registry != nil {
		offs := make([]RegistryOffset, len(accept))
		for i, a := range accept {
			offs[i] = RegistryOffset{TopicPartition: a.tp, Offset: a.c.Offset}
		}
		ctx, cancel := context.WithTimeout(context.Background(), DefaultRegistryWriteTimeout)
		if err := c.registry.Store(ctx, req.Group, offs); err != nil {
			c.cfg.Logger.Warn("writing committed offsets to the registry failed", "group", req.Group, "err", err)
		}
		cancel()
	}
	return resp
}

// commitPart is one partition of an OffsetCommit or TxnOffsetCommit
// request, with where its error code goes.
type commitPart struct {
	tp       TopicPartition
	offset   int64
	epoch    int32
	metadata *string
	code     *int16
}

// commitParts lists the partitions of a commit request's topics (split
// gives a topic's name and partitions, fields a partition's index, offset,
// leader epoch and metadata), each with its slot in codes; without
// epochs (versions that carry none) the leader epoch is -1.
func commitParts[T, P any](topics []T, codes [][]int16, epochs bool, split func(T) (string, []P),
	fields func(P) (int32, int64, int32, *string)) []commitPart {
	var parts []commitPart
	for i, t := range topics {
		topic, ps := split(t)
		for j, p := range ps {
			partition, offset, epoch, meta := fields(p)
			if !epochs {
				epoch = -1
			}
			parts = append(parts, commitPart{TopicPartition{topic, partition}, offset, epoch, meta, &codes[i][j]})
		}
	}
	return parts
}

// acceptedOffset is an offset a commit will store once appended.
type acceptedOffset struct {
	tp TopicPartition
	c  committed
}

// commitRecords checks each part (metadata size, the partition's
// existence; a refused part gets its code) and returns the records of the
// accepted ones and what they store, stamped with the commit time.
func (c *Coordinator) commitRecords(group string, parts []commitPart) ([]Record, []acceptedOffset) {
	now := c.cfg.Now().UnixMilli()
	var records []Record
	var accept []acceptedOffset
	for _, p := range parts {
		meta := ""
		if p.metadata != nil {
			meta = *p.metadata
		}
		switch {
		case len(meta) > int(c.cfg.OffsetMetadataMaxBytes):
			*p.code = kerr.OffsetMetadataTooLarge.Code
			continue
		case c.partitionExists != nil && !c.partitionExists(p.tp.Topic, p.tp.Partition):
			*p.code = kerr.UnknownTopicOrPartition.Code
			continue
		}
		cm := committed{Offset: p.offset, LeaderEpoch: p.epoch, Metadata: meta, CommitTime: now}
		records = append(records, offsetRecord(group, p.tp.Topic, p.tp.Partition, cm))
		accept = append(accept, acceptedOffset{p.tp, cm})
	}
	return records, accept
}

// commitCheck is Kafka's validation of a commit against the group: a
// simple commit (generation -1, no member) only to a group with no
// members; a member's commit with its generation, not while the group
// waits for its leader's assignment. A valid member's commit counts as a
// heartbeat.
func (g *group) commitCheck(req *kmsg.OffsetCommitRequest) int16 {
	if g.state == stateDead {
		return g.deadCode
	}
	if g.cg != nil {
		return g.consumerCommitCheck(req.MemberID, req.Generation, req.Version, false)
	}
	if g.fenced(req.MemberID, req.InstanceID) {
		return kerr.FencedInstanceID.Code
	}
	if req.Generation < 0 && g.state == stateEmpty {
		return 0
	}
	m := g.members[req.MemberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case req.Generation != g.generation:
		return kerr.IllegalGeneration.Code
	case g.state == stateCompleting:
		return kerr.RebalanceInProgress.Code
	}
	g.scheduleExpiry(m, m.sessionTimeout)
	return 0
}

// OffsetFetch handles an OffsetFetch request: one group below v8, several
// from v8. Partitions with no committed offset answer offset -1.
func (c *Coordinator) OffsetFetch(_ context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			var topics map[string][]int32
			if rg.Topics != nil {
				topics = map[string][]int32{}
				for _, t := range rg.Topics {
					topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
				}
			}
			var member *memberEpoch
			if req.Version >= 9 && (rg.MemberID != nil || rg.MemberEpoch >= 0) {
				member = &memberEpoch{rg.MemberID, rg.MemberEpoch}
			}
			code, offs := c.fetchOffsets(rg.Group, topics, rg.Topics == nil, req.RequireStable, member)
			og := kmsg.NewOffsetFetchResponseGroup()
			og.Group, og.ErrorCode = rg.Group, code
			for _, t := range offs {
				ot := kmsg.NewOffsetFetchResponseGroupTopic()
				ot.Topic = t.topic
				for _, p := range t.partitions {
					op := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					op.Partition, op.Offset, op.LeaderEpoch, op.Metadata = p.p, p.c.Offset, p.c.LeaderEpoch, kmsg.StringPtr(p.c.Metadata)
					op.ErrorCode = p.code
					ot.Partitions = append(ot.Partitions, op)
				}
				og.Topics = append(og.Topics, ot)
			}
			resp.Groups = append(resp.Groups, og)
		}
		return resp
	}
	topics := map[string][]int32{}
	for _, t := range req.Topics {
		topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
	}
	// Null topics (v2+) ask for every committed offset.
	code, offs := c.fetchOffsets(req.Group, topics, req.Topics == nil && req.Version >= 2, req.Version >= 7 && req.RequireStable, nil)
	if req.Version >= 2 {
		resp.ErrorCode = code
	}
	if code != 0 && req.Version < 2 {
		// v0-1 carry errors per partition only.
		for _, t := range req.Topics {
			ot := kmsg.NewOffsetFetchResponseTopic()
			ot.Topic = t.Topic
			for _, p := range t.Partitions {
				op := kmsg.NewOffsetFetchResponseTopicPartition()
				op.Partition, op.Offset, op.ErrorCode = p, -1, code
				ot.Partitions = append(ot.Partitions, op)
			}
			resp.Topics = append(resp.Topics, ot)
		}
		return resp
	}
	for _, t := range offs {
		ot := kmsg.NewOffsetFetchResponseTopic()
		ot.Topic = t.topic
		for _, p := range t.partitions {
			op := kmsg.NewOffsetFetchResponseTopicPartition()
			op.Partition, op.Offset, op.LeaderEpoch, op.Metadata = p.p, p.c.Offset, p.c.LeaderEpoch, kmsg.StringPtr(p.c.Metadata)
			op.ErrorCode = p.code
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}

type fetchedTopic struct {
	topic      string
	partitions []fetchedPartition
}

type fetchedPartition struct {
	p int32
	c committed
	// code is UNSTABLE_OFFSET_COMMIT for a partition an open transaction
	// commits an offset for, when the request requires stable offsets
	// (KIP-447): the consumer retries rather than start from an offset
	// the transaction is about to move.
	code int16
}

// memberEpoch is the member an OffsetFetch v9+ names.
type memberEpoch struct {
	id    *string
	epoch int32
}

// fetchOffsets returns the group's offsets for topics (all of them when
// everything is set), in request order, or an error code for the group.
// With stable set, partitions with pending transactional offsets get
// UNSTABLE_OFFSET_COMMIT. A member named (OffsetFetch v9+) of a consumer
// group must be in it at that epoch, as Kafka's validateOffsetFetch.
func (c *Coordinator) fetchOffsets(id string, topics map[string][]int32, everything, stable bool, member *memberEpoch) (int16, []fetchedTopic) {
	if id == "" && !everything && len(topics) == 0 {
		return 0, nil
	}
	g, _, code := c.lookup(id, false)
	if code != 0 {
		return code, nil
	}
	var snapshot map[string]map[int32]committed
	unstable := map[TopicPartition]bool{}
	if g != nil {
		g.mu.Lock()
		if member != nil && g.cg != nil {
			mid := ""
			if member.id != nil {
				mid = *member.id
			}
			m := g.cg.members[mid]
			switch {
			case m == nil:
				g.mu.Unlock()
				return kerr.UnknownMemberID.Code, nil
			case member.epoch > m.epoch:
				g.mu.Unlock()
				return kerr.FencedMemberEpoch.Code, nil
			case member.epoch < m.epoch:
				g.mu.Unlock()
				return kerr.StaleMemberEpoch.Code, nil
			}
		}
		if stable {
			for _, offs := range g.pendingTxn {
				for tp := range offs {
					unstable[tp] = true
				}
			}
		}
		snapshot = make(map[string]map[int32]committed, len(g.offsets))
		for t, ps := range g.offsets {
			snapshot[t] = make(map[int32]committed, len(ps))
			for p, o := range ps {
				snapshot[t][p] = o
			}
		}
		g.mu.Unlock()
	}
	var out []fetchedTopic
	if everything {
		for _, t := range sortedKeys(snapshot) {
			ft := fetchedTopic{topic: t}
			for _, p := range sortedKeys(snapshot[t]) {
				ft.partitions = append(ft.partitions, fetchedPartition{p: p, c: snapshot[t][p]})
			}
			out = append(out, ft)
		}
		return 0, out
	}
	for _, t := range sortedKeys(topics) {
		ft := fetchedTopic{topic: t}
		for _, p := range topics[t] {
			o, ok := snapshot[t][p]
			if !ok {
				o = committed{Offset: -1, LeaderEpoch: -1}
			}
			fp := fetchedPartition{p: p, c: o}
			if unstable[TopicPartition{t, p}] {
				fp.c, fp.code = committed{Offset: -1, LeaderEpoch: -1}, kerr.UnstableOffsetCommit.Code
			}
			ft.partitions = append(ft.partitions, fp)
		}
		out = append(out, ft)
	}
	return 0, out
}

// OffsetDelete handles an OffsetDelete request: the offsets of topics the
// group does not consume (any topic when it has no members) are deleted
// with tombstones.
func (c *Coordinator) OffsetDelete(_ context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	g, ps, code := c.lookup(req.Group, false)
	switch {
	case code != 0:
		resp.ErrorCode = code
		return resp
	case g == nil:
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	ps.writeMu.Lock()
	defer ps.writeMu.Unlock()
	g.mu.Lock()
	if g.state == stateDead {
		g.mu.Unlock()
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	subscribed, ok := g.subscribedTopics()
	if !ok {
		g.mu.Unlock()
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return resp
	}
	var records []Record
	var gone []TopicPartition
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if subscribed[t.Topic] {
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			} else if _, ok := g.offsets[t.Topic][p.Partition]; ok {
				records = append(records, offsetTombstone(req.Group, t.Topic, p.Partition))
				gone = append(gone, TopicPartition{t.Topic, p.Partition})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	g.mu.Unlock()
	if len(records) == 0 {
		return resp
	}
	if err := ps.log.Append(records); err != nil {
		resp.ErrorCode = c.appendCode(err)
		resp.Topics = nil
		return resp
	}
	ps.nextPos()
	g.mu.Lock()
	for _, tp := range gone {
		g.deleteOffset(tp.Topic, tp.Partition)
		g.dropPendingTxn(tp)
	}
	g.mu.Unlock()
	c.registryRemove(req.Group, gone)
	return resp
}

// subscribedTopics returns the topics the members of a consumer group
// subscribe to (none for an empty group); ok is false for a non-empty
// group of another protocol type, whose subscriptions are opaque.
func (g *group) subscribedTopics() (map[string]bool, bool) {
	if g.cg != nil {
		return g.consumerSubscribedTopics(), true
	}
	out := map[string]bool{}
	if g.state == stateEmpty || len(g.members) == 0 {
		return out, true
	}
	if g.protocolType != "consumer" {
		return nil, false
	}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if g.protocol != "" && p.Name != g.protocol {
				continue
			}
			var meta kmsg.ConsumerMemberMetadata
			if err := meta.ReadFrom(p.Metadata); err != nil {
				continue
			}
			for _, t := range meta.Topics {
				out[t] = true
			}
		}
	}
	return out, true
}

func (c *Coordinator) registryRemove(group string, tps []TopicPartition) {
	if c.registry == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultRegistryWriteTimeout)
	defer cancel()
	if err := c.registry.Remove(ctx, group, tps); err != nil {
		c.cfg.Logger.Warn("removing offsets from the registry failed", "group", group, "err", err)
	}
}
