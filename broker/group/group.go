package group

import (
	"bytes"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// state is a classic group's state, Kafka's GroupState.
type state int8

const (
	stateEmpty state = iota
	statePreparing
	stateCompleting
	stateStable
	stateDead
)

// String is the name DescribeGroups and ListGroups report (frozen: Kafka's).
func (s state) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparing:
		return "PreparingRebalance"
	case stateCompleting:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	}
	return "Dead"
}

// joinOutcome is what a JoinGroup request is answered.
type joinOutcome struct {
	err            int16
	memberID       string
	generation     int32
	protocolType   string
	protocol       string
	leader         string
	members        []kmsg.JoinGroupResponseMember
	skipAssignment bool
}

// syncOutcome is what a SyncGroup request is answered.
type syncOutcome struct {
	err        int16
	assignment []byte
}

// member is one member of a group.
type member struct {
	id         string
	instanceID *string
	clientID   string
	clientHost string
	// order is when the member joined, so the leader's member list and
	// the leader choice are deterministic.
	order            uint64
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []kmsg.JoinGroupRequestProtocol
	assignment       []byte

	// joinCh is set while a JoinGroup of this member waits for the
	// rebalance to complete; joinVersion is that request's version.
	joinCh      chan joinOutcome
	joinVersion int16
	// syncCh is set while a SyncGroup waits for the leader's assignment.
	syncCh chan syncOutcome
	// isNew marks a member that has not completed a join yet.
	isNew bool

	expiry    *time.Timer
	expirySeq uint64
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// group is one consumer group: its members and generation (in memory
// only) and its committed offsets (in memory, mirrored from the log).
type group struct {
	id   string
	c    *Coordinator
	part *offsetsPartition

	mu           sync.Mutex
	state        state
	protocolType string
	protocol     string
	generation   int32
	leader       string
	members      map[string]*member
	static       map[string]string // instance id -> member id
	pending      map[string]*time.Timer
	nextOrder    uint64
	offsets      map[string]map[int32]committed
	// pendingTxn holds, per producer id, the offsets of its open
	// transaction (TxnOffsetCommit), applied when its COMMIT marker
	// arrives, dropped at ABORT (txnoffsets.go).
	pendingTxn map[int64]map[TopicPartition]committed
	// emptySince is when the group last became Empty (or was created), in
	// ms by the coordinator's clock: an empty group's offsets expire from
	// then (Kafka's currentStateTimestamp).
	emptySince int64

	rebalanceTimer *time.Timer
	rebalanceSeq   uint64
	// initialDelay is set while the first rebalance of an empty group
	// waits for more members; initialLeft is what is left of the
	// rebalance timeout for extensions.
	initialDelay   bool
	initialLeft    time.Duration
	newMemberAdded bool
	// deadCode answers requests once the group is dead: NOT_COORDINATOR
	// when unloaded, COORDINATOR_NOT_AVAILABLE when deleted (the client
	// looks the coordinator up again and finds a fresh group).
	deadCode int16
	// cg is the consumer-protocol state (KIP-848) of a consumer group,
	// nil for a classic group.
	cg *consumerGroup
}

func (c *Coordinator) newGroup(ps *offsetsPartition, id string) *group {
	return &group{
		id: id, c: c, part: ps,
		members: map[string]*member{}, static: map[string]string{},
		pending: map[string]*time.Timer{}, offsets: map[string]map[int32]committed{},
		emptySince: c.cfg.Now().UnixMilli(),
	}
}

func (g *group) setOffset(topic string, p int32, o committed) {
	if g.offsets[topic] == nil {
		g.offsets[topic] = map[int32]committed{}
	}
	g.offsets[topic][p] = o
}

func (g *group) deleteOffset(topic string, p int32) {
	delete(g.offsets[topic], p)
	if len(g.offsets[topic]) == 0 {
		delete(g.offsets, topic)
	}
}

// fenced reports a request whose instance id maps to another member.
func (g *group) fenced(memberID string, instanceID *string) bool {
	if instanceID == nil {
		return false
	}
	id, ok := g.static[*instanceID]
	return ok && id != memberID
}

// candidates are the protocols every member supports.
func (g *group) candidates(extra []kmsg.JoinGroupRequestProtocol) map[string]bool {
	out := map[string]bool{}
	for _, p := range extra {
		out[p.Name] = true
	}
	for _, m := range g.members {
		have := map[string]bool{}
		for _, p := range m.protocols {
			have[p.Name] = true
		}
		for n := range out {
			if !have[n] {
				delete(out, n)
			}
		}
	}
	return out
}

// supports is Kafka's supportsProtocols: a joining member must share the
// protocol type and at least one protocol with every member.
func (g *group) supports(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if protocolType == "" || len(protocols) == 0 {
		return false
	}
	if len(g.members) == 0 {
		return true
	}
	return protocolType == g.protocolType && len(g.candidates(protocols)) > 0
}

// selectProtocol lets every member vote for its most preferred candidate;
// ties go to the earliest member's preference.
func (g *group) selectProtocol() string {
	cands := g.candidates(g.orderedMembers()[0].protocols)
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if cands[p.Name] {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	for _, p := range g.orderedMembers()[0].protocols {
		if cands[p.Name] && votes[p.Name] > bestVotes {
			best, bestVotes = p.Name, votes[p.Name]
		}
	}
	return best
}

func (g *group) orderedMembers() []*member {
	out := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *member) int { return int(a.order) - int(b.order) })
	return out
}

func (g *group) full() bool {
	return int64(len(g.members)+len(g.pending)) >= int64(g.c.cfg.MaxGroupSize)
}

func sameProtocols(a, b []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(a, b, func(x, y kmsg.JoinGroupRequestProtocol) bool {
		return x.Name == y.Name && bytes.Equal(x.Metadata, y.Metadata)
	})
}

// join runs a JoinGroup under g.mu: it answers at once (ch nil) or
// registers the member's wait for the rebalance.
func (g *group) join(req *kmsg.JoinGroupRequest, clientID, clientHost string, session, rebalance time.Duration) (joinOutcome, chan joinOutcome) {
	fail := func(code int16) (joinOutcome, chan joinOutcome) {
		return joinOutcome{err: code, memberID: req.MemberID, generation: -1}, nil
	}
	if g.state == stateDead {
		return fail(g.deadCode)
	}
	if g.cg != nil {
		if len(g.cg.members) > 0 {
			// A consumer-protocol group refuses classic members, as
			// Kafka does without group.consumer.migration.policy.
			return fail(kerr.InconsistentGroupProtocol.Code)
		}
		g.cg = nil // an empty consumer group becomes a classic one
	}
	fill := func(m *member) {
		m.clientID, m.clientHost = clientID, clientHost
		m.sessionTimeout, m.rebalanceTimeout = session, rebalance
		m.protocolType, m.protocols = req.ProtocolType, req.Protocols
	}
	if req.MemberID == "" {
		if !g.supports(req.ProtocolType, req.Protocols) {
			return fail(kerr.InconsistentGroupProtocol.Code)
		}
		if req.InstanceID != nil {
			if old, ok := g.static[*req.InstanceID]; ok {
				return g.replaceStatic(g.members[old], req, fill)
			}
		}
		if g.full() {
			return fail(kerr.GroupMaxSizeReached.Code)
		}
		prefix := clientID
		if req.InstanceID != nil {
			prefix = *req.InstanceID
		}
		id := newMemberID(prefix)
		if req.InstanceID == nil && req.Version >= 4 {
			// KIP-394: the member must come back with the id, so that a
			// client that times out its join does not leave a ghost.
			g.pending[id] = time.AfterFunc(session, func() { g.expirePending(id) })
			return joinOutcome{err: kerr.MemberIDRequired.Code, memberID: id, generation: -1}, nil
		}
		m := &member{id: id, instanceID: req.InstanceID}
		fill(m)
		return g.addMember(m, req.Version)
	}
	if t, ok := g.pending[req.MemberID]; ok {
		t.Stop()
		delete(g.pending, req.MemberID)
		if !g.supports(req.ProtocolType, req.Protocols) {
			return fail(kerr.InconsistentGroupProtocol.Code)
		}
		m := &member{id: req.MemberID, instanceID: req.InstanceID}
		fill(m)
		return g.addMember(m, req.Version)
	}
	if g.fenced(req.MemberID, req.InstanceID) {
		return fail(kerr.FencedInstanceID.Code)
	}
	m := g.members[req.MemberID]
	if m == nil || g.state == stateEmpty {
		return fail(kerr.UnknownMemberID.Code)
	}
	if !g.supports(req.ProtocolType, req.Protocols) {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	same := sameProtocols(m.protocols, req.Protocols)
	fill(m)
	switch g.state {
	case stateCompleting, stateStable:
		if same && (g.state == stateCompleting || m.id != g.leader) {
			// A resent join (its response was lost): the current
			// generation, as Kafka answers it; the leader gets the
			// members again so that it can still assign.
			g.scheduleExpiry(m, m.sessionTimeout)
			return g.outcomeFor(m, m.id == g.leader), nil
		}
		ch := g.await(m, req.Version)
		g.prepareRebalance()
		return joinOutcome{}, ch
	default: // preparing
		ch := g.await(m, req.Version)
		g.maybeCompleteJoin()
		return joinOutcome{}, ch
	}
}

// await registers m's join wait, answering an older one of the same member.
func (g *group) await(m *member, version int16) chan joinOutcome {
	if m.joinCh != nil {
		m.joinCh <- joinOutcome{err: kerr.RebalanceInProgress.Code, memberID: m.id, generation: -1}
	}
	m.joinCh = make(chan joinOutcome, 1)
	m.joinVersion = version
	return m.joinCh
}

// addMember adds a new member and has the group rebalance.
func (g *group) addMember(m *member, version int16) (joinOutcome, chan joinOutcome) {
	g.nextOrder++
	m.order = g.nextOrder
	m.isNew = true
	g.members[m.id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if len(g.members) == 1 {
		g.protocolType = m.protocolType
	}
	g.newMemberAdded = true
	ch := g.await(m, version)
	g.scheduleExpiry(m, newMemberJoinTimeout)
	if g.state == statePreparing {
		g.maybeCompleteJoin()
	} else {
		g.prepareRebalance()
	}
	return joinOutcome{}, ch
}

// replaceStatic gives a known static member (a restarted process) a new
// member id, fencing the old one. In a stable group whose protocol stays
// the same it gets the current generation and its old assignment with no
// rebalance, which is the point of static membership (KIP-345).
func (g *group) replaceStatic(old *member, req *kmsg.JoinGroupRequest, fill func(*member)) (joinOutcome, chan joinOutcome) {
	if old.joinCh != nil {
		old.joinCh <- joinOutcome{err: kerr.FencedInstanceID.Code, memberID: old.id, generation: -1}
		old.joinCh = nil
	}
	if old.syncCh != nil {
		old.syncCh <- syncOutcome{err: kerr.FencedInstanceID.Code}
		old.syncCh = nil
	}
	g.stopExpiry(old)
	m := &member{id: newMemberID(*req.InstanceID), instanceID: req.InstanceID, order: old.order, assignment: old.assignment}
	fill(m)
	delete(g.members, old.id)
	g.members[m.id] = m
	g.static[*req.InstanceID] = m.id
	if g.leader == old.id {
		g.leader = m.id
	}
	switch g.state {
	case stateStable:
		if g.selectProtocol() == g.protocol && (m.id != g.leader || req.Version >= 9) {
			g.scheduleExpiry(m, m.sessionTimeout)
			out := g.outcomeFor(m, m.id == g.leader)
			out.skipAssignment = m.id == g.leader
			return out, nil
		}
		ch := g.await(m, req.Version)
		g.scheduleExpiry(m, m.sessionTimeout)
		g.prepareRebalance()
		return joinOutcome{}, ch
	case stateCompleting:
		// The old member may have been sent an assignment already.
		ch := g.await(m, req.Version)
		g.scheduleExpiry(m, m.sessionTimeout)
		g.prepareRebalance()
		return joinOutcome{}, ch
	default:
		ch := g.await(m, req.Version)
		g.scheduleExpiry(m, m.sessionTimeout)
		g.maybeCompleteJoin()
		return joinOutcome{}, ch
	}
}

// outcomeFor is the current generation as m's join answer; withMembers
// adds the member list the leader assigns from.
func (g *group) outcomeFor(m *member, withMembers bool) joinOutcome {
	out := joinOutcome{
		memberID: m.id, generation: g.generation, protocolType: g.protocolType,
		protocol: g.protocol, leader: g.leader,
	}
	if withMembers {
		out.members = []kmsg.JoinGroupResponseMember{}
		for _, o := range g.orderedMembers() {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = o.id, o.instanceID, o.metadataFor(g.protocol)
			out.members = append(out.members, jm)
		}
	}
	return out
}

func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// prepareRebalance starts a rebalance: pending syncs are told to rejoin
// and the members get the rebalance timeout to join again. The first
// rebalance of an empty group waits group.initial.rebalance.delay.ms for
// more members, extended while new ones arrive, as Kafka's
// InitialDelayedJoin.
func (g *group) prepareRebalance() {
	if g.state == stateCompleting {
		for _, m := range g.members {
			m.assignment = nil
			if m.syncCh != nil {
				m.syncCh <- syncOutcome{err: kerr.RebalanceInProgress.Code}
				m.syncCh = nil
			}
		}
	}
	initial := g.state == stateEmpty
	g.state = statePreparing
	g.stopRebalanceTimer()
	rt := g.rebalanceTimeout()
	if initial && g.c.cfg.InitialRebalanceDelay > 0 {
		d := min(g.c.cfg.InitialRebalanceDelay, rt)
		g.initialDelay = true
		g.initialLeft = max(rt-d, 0)
		g.newMemberAdded = false
		g.armRebalanceTimer(d, g.onInitialDelay)
		return
	}
	g.initialDelay = false
	g.armRebalanceTimer(rt, g.completeJoin)
	g.maybeCompleteJoin()
}

func (g *group) onInitialDelay() {
	if g.newMemberAdded && g.initialLeft > 0 {
		d := min(g.c.cfg.InitialRebalanceDelay, g.initialLeft)
		g.initialLeft -= d
		g.newMemberAdded = false
		g.armRebalanceTimer(d, g.onInitialDelay)
		return
	}
	g.initialDelay = false
	g.completeJoin()
}

// armRebalanceTimer runs fn under g.mu after d, unless the timer was
// stopped or re-armed meanwhile.
func (g *group) armRebalanceTimer(d time.Duration, fn func()) {
	g.rebalanceSeq++
	seq := g.rebalanceSeq
	g.rebalanceTimer = time.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.rebalanceSeq == seq && g.state == statePreparing {
			fn()
		}
	})
}

func (g *group) stopRebalanceTimer() {
	g.rebalanceSeq++
	if g.rebalanceTimer != nil {
		g.rebalanceTimer.Stop()
		g.rebalanceTimer = nil
	}
}

// maybeCompleteJoin completes the rebalance once every member has joined
// and no member id handed out with MEMBER_ID_REQUIRED is outstanding.
func (g *group) maybeCompleteJoin() {
	if g.state != statePreparing || g.initialDelay || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.joinCh == nil {
			return
		}
	}
	g.completeJoin()
}

// completeJoin ends the join phase: members that did not rejoin are
// removed, the generation advances, a protocol and a leader are chosen and
// every waiting join is answered, the leader's with the member list.
func (g *group) completeJoin() {
	g.stopRebalanceTimer()
	for _, m := range g.members {
		if m.joinCh == nil {
			g.dropMember(m)
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.state = stateEmpty
		g.emptySince = g.c.cfg.Now().UnixMilli()
		g.protocol, g.leader = "", ""
		return
	}
	g.protocol = g.selectProtocol()
	if _, ok := g.members[g.leader]; !ok {
		g.leader = g.orderedMembers()[0].id
	}
	g.state = stateCompleting
	for _, m := range g.members {
		out := g.outcomeFor(m, m.id == g.leader)
		m.joinCh <- out
		m.joinCh = nil
		m.isNew = false
		g.scheduleExpiry(m, m.sessionTimeout)
	}
}

// dropMember removes m without triggering a rebalance.
func (g *group) dropMember(m *member) {
	g.stopExpiry(m)
	if m.joinCh != nil {
		m.joinCh <- joinOutcome{err: kerr.UnknownMemberID.Code, memberID: m.id, generation: -1}
		m.joinCh = nil
	}
	if m.syncCh != nil {
		m.syncCh <- syncOutcome{err: kerr.UnknownMemberID.Code}
		m.syncCh = nil
	}
	delete(g.members, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
	}
}

// removeMember removes m (left, or its session expired) and rebalances.
func (g *group) removeMember(m *member) {
	g.dropMember(m)
	switch g.state {
	case stateStable, stateCompleting:
		g.prepareRebalance()
	case statePreparing:
		g.maybeCompleteJoin()
	}
}

// scheduleExpiry (re)starts m's session timer.
func (g *group) scheduleExpiry(m *member, d time.Duration) {
	g.stopExpiry(m)
	seq := m.expirySeq
	m.expiry = time.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if m.expirySeq != seq || g.members[m.id] != m {
			return
		}
		// A member waiting in a join or a sync is alive: Kafka's
		// shouldKeepAlive. A new member gets newMemberJoinTimeout.
		if (m.joinCh != nil && !m.isNew) || m.syncCh != nil {
			g.scheduleExpiry(m, m.sessionTimeout)
			return
		}
		g.c.cfg.Logger.Info("group member session expired", "group", g.id, "member", m.id, "generation", g.generation)
		g.removeMember(m)
	})
}

func (g *group) stopExpiry(m *member) {
	m.expirySeq++
	if m.expiry != nil {
		m.expiry.Stop()
		m.expiry = nil
	}
}

func (g *group) expirePending(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.pending[id]; !ok {
		return
	}
	delete(g.pending, id)
	g.maybeCompleteJoin()
}

// sync runs a SyncGroup under g.mu.
func (g *group) sync(req *kmsg.SyncGroupRequest) (syncOutcome, chan syncOutcome) {
	fail := func(code int16) (syncOutcome, chan syncOutcome) { return syncOutcome{err: code}, nil }
	if g.state == stateDead {
		return fail(g.deadCode)
	}
	m := g.members[req.MemberID]
	switch {
	case g.fenced(req.MemberID, req.InstanceID):
		return fail(kerr.FencedInstanceID.Code)
	case m == nil:
		return fail(kerr.UnknownMemberID.Code)
	case req.Generation != g.generation:
		return fail(kerr.IllegalGeneration.Code)
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	switch g.state {
	case statePreparing:
		return fail(kerr.RebalanceInProgress.Code)
	case stateStable:
		g.scheduleExpiry(m, m.sessionTimeout)
		return syncOutcome{assignment: m.assignment}, nil
	case stateCompleting:
	default:
		return fail(kerr.UnknownMemberID.Code)
	}
	if m.syncCh != nil {
		m.syncCh <- syncOutcome{err: kerr.RebalanceInProgress.Code}
	}
	m.syncCh = make(chan syncOutcome, 1)
	ch := m.syncCh
	g.scheduleExpiry(m, m.sessionTimeout)
	if m.id != g.leader {
		return syncOutcome{}, ch
	}
	total := 0
	for _, a := range req.GroupAssignment {
		total += len(a.MemberAssignment)
	}
	if total > int(g.c.cfg.MaxAssignmentBytes) {
		// Kafka fails the group record's write with MESSAGE_TOO_LARGE
		// and answers UNKNOWN_SERVER_ERROR; the members rejoin.
		g.c.cfg.Logger.Warn("group assignment too large; rebalancing again", "group", g.id, "bytes", total,
			"max", g.c.cfg.MaxAssignmentBytes)
		for _, o := range g.members {
			if o.syncCh != nil {
				o.syncCh <- syncOutcome{err: kerr.UnknownServerError.Code}
				o.syncCh = nil
			}
		}
		g.prepareRebalance()
		return syncOutcome{}, ch
	}
	for _, o := range g.members {
		o.assignment = []byte{}
	}
	for _, a := range req.GroupAssignment {
		if o := g.members[a.MemberID]; o != nil {
			o.assignment = a.MemberAssignment
		}
	}
	g.state = stateStable
	for _, o := range g.members {
		if o.syncCh != nil {
			o.syncCh <- syncOutcome{assignment: o.assignment}
			o.syncCh = nil
		}
	}
	return syncOutcome{}, ch
}

// heartbeat runs a Heartbeat under g.mu.
func (g *group) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	if g.state == stateDead {
		return g.deadCode
	}
	m := g.members[req.MemberID]
	switch {
	case g.fenced(req.MemberID, req.InstanceID):
		return kerr.FencedInstanceID.Code
	case m == nil || g.state == stateEmpty:
		return kerr.UnknownMemberID.Code
	case req.Generation != g.generation:
		return kerr.IllegalGeneration.Code
	}
	g.scheduleExpiry(m, m.sessionTimeout)
	if g.state == statePreparing {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// leave removes one member named by member id or instance id.
func (g *group) leave(memberID string, instanceID *string) int16 {
	if g.state == stateDead {
		return g.deadCode
	}
	if instanceID != nil {
		id, ok := g.static[*instanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID.Code
		case memberID != "" && memberID != id:
			return kerr.FencedInstanceID.Code
		}
		memberID = id
	}
	if t, ok := g.pending[memberID]; ok {
		t.Stop()
		delete(g.pending, memberID)
		g.maybeCompleteJoin()
		return 0
	}
	m := g.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	g.c.cfg.Logger.Debug("group member left", "group", g.id, "member", memberID)
	g.removeMember(m)
	return 0
}

// unload answers every wait with NOT_COORDINATOR and stops the timers;
// the group is dead to whoever still holds it.
func (g *group) unload() {
	g.stopRebalanceTimer()
	for _, m := range g.members {
		g.stopExpiry(m)
		if m.joinCh != nil {
			m.joinCh <- joinOutcome{err: kerr.NotCoordinator.Code, memberID: m.id, generation: -1}
			m.joinCh = nil
		}
		if m.syncCh != nil {
			m.syncCh <- syncOutcome{err: kerr.NotCoordinator.Code}
			m.syncCh = nil
		}
	}
	for _, t := range g.pending {
		t.Stop()
	}
	g.unloadConsumer()
	g.state = stateDead
	g.deadCode = kerr.NotCoordinator.Code
}
