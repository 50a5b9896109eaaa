package group

import (
	"hash/fnv"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The consumer group protocol (KIP-848): the coordinator computes the
// assignment, members reconcile towards it one heartbeat at a time. This
// file holds a consumer group's state and its rules, after Kafka's
// GroupMetadataManager and CurrentAssignmentBuilder.

// Member epochs a heartbeat carries besides a member's epoch (frozen: the
// protocol's).
const (
	joinEpoch        = 0
	leaveEpoch       = -1
	staticLeaveEpoch = -2
)

// cmemberState is Kafka's MemberState (frozen: its byte values are
// stored in ConsumerGroupCurrentMemberAssignment records).
type cmemberState int8

const (
	memberStable     cmemberState = 0 // reconciled with the target
	memberUnrevoked  cmemberState = 1 // must revoke partitions first
	memberUnreleased cmemberState = 2 // at the target epoch, waits for partitions others still own
)

// TopicMeta is what the coordinator needs of a topic: its id and
// partition count.
type TopicMeta struct {
	ID         [16]byte
	Partitions int32
}

// cmember is one member of a consumer group.
type cmember struct {
	id                   string
	instanceID, rackID   *string
	clientID, clientHost string
	topics               []string // subscribed names, sorted
	regex                *string
	assignor             string
	rebalanceTimeout     time.Duration
	hasMetadata          bool

	epoch, prevEpoch int32
	state            cmemberState
	assigned         assignment // the partitions it may consume
	revoking         assignment // the partitions it must give up

	expiry    *time.Timer
	expirySeq uint64
	revokeSeq uint64
}

func newCMember(id string) *cmember {
	return &cmember{id: id, assigned: assignment{}, revoking: assignment{}}
}

// consumerGroup is the consumer-protocol state of a group.
type consumerGroup struct {
	epoch           int32 // the group epoch
	assignmentEpoch int32 // the target assignment's epoch
	hash            uint64
	members         map[string]*cmember
	static          map[string]string // instance id -> member id
	target          map[string]assignment
	// owner is the member holding each partition (assigned or pending
	// revocation): a partition goes to its next owner only once free.
	owner map[tpID]string
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{members: map[string]*cmember{}, static: map[string]string{},
		target: map[string]assignment{}, owner: map[tpID]string{}}
}

// stateName is what ConsumerGroupDescribe and ListGroups report (frozen:
// Kafka's ConsumerGroupState names).
func (cg *consumerGroup) stateName() string {
	if len(cg.members) == 0 {
		return "Empty"
	}
	if cg.epoch != cg.assignmentEpoch {
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// release frees the partitions m holds (assigned or being revoked).
func (cg *consumerGroup) release(m *cmember) {
	for _, a := range []assignment{m.assigned, m.revoking} {
		for id, ps := range a {
			for _, p := range ps {
				if cg.owner[tpID{id, p}] == m.id {
					delete(cg.owner, tpID{id, p})
				}
			}
		}
	}
}

// claim records m as the holder of its partitions.
func (cg *consumerGroup) claim(m *cmember) {
	for _, a := range []assignment{m.assigned, m.revoking} {
		for id, ps := range a {
			for _, p := range ps {
				cg.owner[tpID{id, p}] = m.id
			}
		}
	}
}

// free: nobody but member holds the partition.
func (cg *consumerGroup) free(id [16]byte, p int32, member string) bool {
	o, ok := cg.owner[tpID{id, p}]
	return !ok || o == member
}

// reconcile moves m towards its target assignment as Kafka's
// CurrentAssignmentBuilder does; owned is what the member reported (nil:
// unchanged). It reports whether m changed.
func (cg *consumerGroup) reconcile(m *cmember, owned assignment) bool {
	ownsRevoked := func(revoking assignment) bool {
		if owned == nil {
			return true
		}
		return len(revoking.intersect(owned)) > 0
	}
	switch m.state {
	case memberStable:
		if m.epoch == cg.assignmentEpoch {
			return false
		}
	case memberUnrevoked:
		if ownsRevoked(m.revoking) {
			return false
		}
	}
	target := cg.target[m.id]
	keep := m.assigned.intersect(target)
	revoking := m.assigned.minus(keep)
	pending := assignment{}
	unreleased := false
	for id, ps := range target.minus(keep) {
		for _, p := range ps {
			if cg.free(id, p, m.id) {
				pending.add(id, p)
			} else {
				unreleased = true
			}
		}
	}
	cg.release(m)
	old := *m
	if len(revoking) > 0 && ownsRevoked(revoking) {
		m.state, m.assigned, m.revoking = memberUnrevoked, keep, revoking
	} else {
		for id, ps := range pending {
			for _, p := range ps {
				keep.add(id, p)
			}
		}
		m.state = memberStable
		if unreleased {
			m.state = memberUnreleased
		}
		if m.epoch != cg.assignmentEpoch {
			m.prevEpoch, m.epoch = m.epoch, cg.assignmentEpoch
		}
		m.assigned, m.revoking = keep, assignment{}
	}
	cg.claim(m)
	return old.state != m.state || old.epoch != m.epoch || !old.assigned.equal(m.assigned) || !old.revoking.equal(m.revoking)
}

// subscriptions resolves every member's subscription against topics: per
// member the topic ids it subscribes to, their partition counts, and the
// names of every subscribed topic.
func (cg *consumerGroup) subscriptions(topics map[string]TopicMeta) (map[string]map[[16]byte]bool, map[[16]byte]int32, map[string]bool) {
	subs := map[string]map[[16]byte]bool{}
	parts := map[[16]byte]int32{}
	names := map[string]bool{}
	for _, m := range cg.members {
		set := map[[16]byte]bool{}
		add := func(name string) {
			if t, ok := topics[name]; ok && t.Partitions > 0 {
				set[t.ID] = true
				parts[t.ID] = t.Partitions
				names[name] = true
			}
		}
		for _, t := range m.topics {
			add(t)
		}
		if m.regex != nil {
			if re, err := compileSubscription(*m.regex); err == nil {
				for name := range topics {
					if re.MatchString(name) {
						add(name)
					}
				}
			}
		}
		subs[m.id] = set
	}
	return subs, parts, names
}

// metadataHash summarizes the subscribed topics' metadata; a change (a
// topic created, deleted or grown) bumps the group epoch.
func metadataHash(topics map[string]TopicMeta, names map[string]bool) uint64 {
	h := fnv.New64a()
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		t := topics[n]
		var b []byte
		b = kbin.AppendString(b, n)
		b = kbin.AppendUuid(b, t.ID)
		b = kbin.AppendInt32(b, t.Partitions)
		_, _ = h.Write(b)
	}
	return h.Sum64()
}

// compileSubscription compiles a subscription regex as Kafka matches it:
// against the whole topic name (RE2 syntax, as Kafka's RE2/J).
func compileSubscription(re string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + re + ")$")
}

// chooseAssignor is the assignor most members ask for (ties to the one
// configured first), else the first configured: Kafka's rule.
func (cg *consumerGroup) chooseAssignor(configured []string) string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best := configured[0]
	for _, a := range configured {
		if votes[a] > votes[best] {
			best = a
		}
	}
	return best
}

// computeTarget recomputes the target assignment at the group epoch.
func (cg *consumerGroup) computeTarget(topics map[string]TopicMeta, configured []string) string {
	subs, parts, _ := cg.subscriptions(topics)
	members := make([]string, 0, len(cg.members))
	for id := range cg.members {
		members = append(members, id)
	}
	sort.Strings(members)
	name := cg.chooseAssignor(configured)
	cg.target = assignors[name](assignorInput{members: members, subscribed: subs, partitions: parts, previous: cg.target})
	cg.assignmentEpoch = cg.epoch
	return name
}

// toAssignment turns a heartbeat's owned partitions into an assignment
// (nil stays nil: unchanged).
func toAssignment(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) assignment {
	if topics == nil {
		return nil
	}
	a := assignment{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			a.add(t.TopicID, p)
		}
	}
	return a
}

func responseAssignment(a assignment) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	out.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, id := range a.topicIDs() {
		t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		t.TopicID, t.Partitions = id, slices.Clone(a[id])
		out.Topics = append(out.Topics, t)
	}
	return &out
}

// hbResult is a heartbeat's outcome under the group lock.
type hbResult struct {
	code     int16
	message  string
	memberID string
	epoch    int32
	assigned *kmsg.ConsumerGroupHeartbeatResponseAssignment
	records  []Record
}

func hbFail(code int16, msg string) hbResult { return hbResult{code: code, message: msg} }

// validHeartbeat is Kafka's request validation.
func validHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	switch {
	case req.Group == "":
		return kerr.InvalidRequest.Code, "GroupId can't be empty."
	case req.MemberEpoch < staticLeaveEpoch:
		return kerr.InvalidRequest.Code, "MemberEpoch is invalid."
	case req.Version >= 1 && req.MemberID == "":
		return kerr.InvalidRequest.Code, "MemberId can't be empty."
	case req.MemberEpoch == staticLeaveEpoch && req.InstanceID == nil:
		return kerr.InvalidRequest.Code, "InstanceId can't be null for a static member leaving."
	case req.MemberEpoch == joinEpoch && req.RebalanceTimeoutMillis == -1:
		return kerr.InvalidRequest.Code, "RebalanceTimeoutMs must be provided in first request."
	case req.MemberEpoch == joinEpoch && len(req.Topics) > 0:
		return kerr.InvalidRequest.Code, "TopicPartitions must be empty when (re-)joining."
	case req.MemberEpoch == joinEpoch && req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
		return kerr.InvalidRequest.Code, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
	case req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "":
		if _, err := compileSubscription(*req.SubscribedTopicRegex); err != nil {
			return kerr.InvalidRegularExpression.Code, "SubscribedTopicRegex is not a valid regular expression: " + err.Error()
		}
	}
	return 0, ""
}

// consumerHeartbeat runs a ConsumerGroupHeartbeat under g.mu (and the
// partition's writeMu): it returns the answer and the records to append.
func (g *group) consumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string) hbResult {
	cfg := g.c.cfg
	if g.state == stateDead {
		return hbFail(g.deadCode, "")
	}
	if a := req.ServerAssignor; a != nil && !slices.Contains(cfg.ConsumerAssignors, *a) {
		return hbFail(kerr.UnsupportedAssignor.Code, "ServerAssignor "+*a+" is not supported. Supported assignors: "+strings.Join(cfg.ConsumerAssignors, ", ")+".")
	}
	if g.cg == nil {
		if len(g.members) > 0 || g.state != stateEmpty {
			return hbFail(kerr.GroupIDNotFound.Code, "Group "+g.id+" is not a consumer group.")
		}
		g.cg = newConsumerGroup()
	}
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return g.consumerLeave(req)
	}
	var records []Record
	m, bump, fail := g.consumerMember(req, clientID, &records)
	if fail.code != 0 {
		return fail
	}
	metaChanged, subscriptionChanged := m.update(req, clientID, clientHost)
	if req.InstanceID != nil {
		g.cg.static[*req.InstanceID] = m.id
	}
	if metaChanged {
		records = append(records, cgMemberRecord(g.id, m))
	}
	records = append(records, g.refreshTarget(bump || subscriptionChanged)...)

	before := m.assigned.clone()
	wasUnrevoked := m.state == memberUnrevoked
	if g.cg.reconcile(m, toAssignment(req.Topics)) || metaChanged {
		records = append(records, cgCurrentRecord(g.id, m))
	}
	if m.state == memberUnrevoked && !wasUnrevoked {
		g.scheduleRevocationTimeout(m)
	}
	g.scheduleConsumerExpiry(m)
	out := hbResult{memberID: m.id, epoch: m.epoch, records: records}
	full := req.MemberEpoch == joinEpoch ||
		(req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil)
	if full || !before.equal(m.assigned) {
		out.assigned = responseAssignment(m.assigned)
	}
	return out
}

// consumerLeave handles a leave (epoch -1) or a static member's leave for
// a restart (-2), which keeps its assignment until its session expires or
// the instance comes back.
func (g *group) consumerLeave(req *kmsg.ConsumerGroupHeartbeatRequest) hbResult {
	cg := g.cg
	m := cg.members[req.MemberID]
	if req.InstanceID != nil {
		id, ok := cg.static[*req.InstanceID]
		switch {
		case !ok:
			return hbFail(kerr.UnknownMemberID.Code, "Instance id "+*req.InstanceID+" is unknown.")
		case id != req.MemberID:
			return hbFail(kerr.FencedInstanceID.Code, "Instance id "+*req.InstanceID+" belongs to another member.")
		}
		m = cg.members[id]
	}
	if m == nil {
		return hbFail(kerr.UnknownMemberID.Code, "Member "+req.MemberID+" is not a member of the group.")
	}
	var records []Record
	if req.MemberEpoch == staticLeaveEpoch {
		m.epoch = staticLeaveEpoch
		records = append(records, cgCurrentRecord(g.id, m))
	} else {
		records = g.removeConsumerMember(m)
	}
	return hbResult{memberID: req.MemberID, epoch: req.MemberEpoch, records: records}
}

// consumerMember finds (or, joining, adds) the heartbeat's member and
// checks its epoch; bump is set for a new member.
func (g *group) consumerMember(req *kmsg.ConsumerGroupHeartbeatRequest, clientID string, records *[]Record) (*cmember, bool, hbResult) {
	cg := g.cg
	memberID := req.MemberID
	m := cg.members[memberID]
	if req.MemberEpoch != joinEpoch {
		owned := toAssignment(req.Topics)
		switch {
		case m == nil:
			return nil, false, hbFail(kerr.UnknownMemberID.Code, "Member "+memberID+" is not a member of the group.")
		case req.InstanceID != nil && cg.static[*req.InstanceID] != memberID:
			return nil, false, hbFail(kerr.FencedInstanceID.Code, "Instance id "+*req.InstanceID+" belongs to another member.")
		case req.MemberEpoch > m.epoch:
			return nil, false, hbFail(kerr.FencedMemberEpoch.Code, "The consumer group member has a greater member epoch than expected.")
		case req.MemberEpoch < m.epoch && (req.MemberEpoch != m.prevEpoch || owned == nil || len(owned.minus(m.assigned)) > 0):
			// Only the previous epoch is accepted, from a member that
			// missed the bump and owns nothing it was not given.
			return nil, false, hbFail(kerr.FencedMemberEpoch.Code, "The consumer group member has a smaller member epoch than expected.")
		}
		return m, false, hbResult{}
	}
	if memberID == "" { // v0: the coordinator names the member
		memberID = newMemberID(clientID)
	}
	if req.InstanceID != nil {
		if oldID, ok := cg.static[*req.InstanceID]; ok && oldID != memberID {
			old := cg.members[oldID]
			if old != nil && old.epoch != staticLeaveEpoch {
				return nil, false, hbFail(kerr.UnreleasedInstanceID.Code, "Static member "+*req.InstanceID+" is still in the group.")
			}
			if old != nil {
				return g.takeOverStatic(old, memberID, records), false, hbResult{}
			}
		}
	}
	if m != nil {
		return m, false, hbResult{}
	}
	if int64(len(cg.members)) >= int64(g.c.cfg.ConsumerMaxSize) {
		return nil, false, hbFail(kerr.GroupMaxSizeReached.Code, "The consumer group has reached its maximum size.")
	}
	m = newCMember(memberID)
	cg.members[memberID] = m
	return m, true, hbResult{}
}

// update applies a heartbeat's non-null fields to m: metaChanged when
// its stored metadata changed, subscriptionChanged when what it is
// assigned from did (topics, regex, assignor).
func (m *cmember) update(req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string) (metaChanged, subscriptionChanged bool) {
	metaChanged = !m.hasMetadata
	m.hasMetadata = true
	setStr := func(dst **string, v *string) bool {
		if v != nil && (*dst == nil || **dst != *v) {
			*dst = kmsg.StringPtr(*v)
			return true
		}
		return false
	}
	instanceChanged := setStr(&m.instanceID, req.InstanceID)
	rackChanged := setStr(&m.rackID, req.RackID)
	metaChanged = metaChanged || instanceChanged || rackChanged
	if m.clientID != clientID || m.clientHost != clientHost {
		m.clientID, m.clientHost, metaChanged = clientID, clientHost, true
	}
	if req.RebalanceTimeoutMillis != -1 {
		if d := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond; d != m.rebalanceTimeout {
			m.rebalanceTimeout, metaChanged = d, true
		}
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		sort.Strings(names)
		if names = slices.Compact(names); !slices.Equal(names, m.topics) {
			m.topics, subscriptionChanged = names, true
		}
	}
	if req.SubscribedTopicRegex != nil {
		var re *string
		if *req.SubscribedTopicRegex != "" {
			re = kmsg.StringPtr(*req.SubscribedTopicRegex)
		}
		if (re == nil) != (m.regex == nil) || (re != nil && *re != *m.regex) {
			m.regex, subscriptionChanged = re, true
		}
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.assignor {
		m.assignor, subscriptionChanged = *req.ServerAssignor, true
	}
	return metaChanged || subscriptionChanged, subscriptionChanged
}

// refreshTarget bumps the group epoch when bump is set or the subscribed
// topics' metadata changed, and recomputes the target assignment when
// its epoch is behind; it returns the records saying so.
func (g *group) refreshTarget(bump bool) []Record {
	cg, cfg := g.cg, g.c.cfg
	var records []Record
	topics := g.c.topicMetadata()
	_, _, names := cg.subscriptions(topics)
	if h := metadataHash(topics, names); h != cg.hash {
		cg.hash, bump = h, true
	}
	if bump {
		cg.epoch++
		records = append(records, cgMetadataRecord(g.id, cg.epoch, cg.hash))
	}
	if cg.epoch == cg.assignmentEpoch {
		return records
	}
	before := cg.target
	name := cg.computeTarget(topics, cfg.ConsumerAssignors)
	for _, id := range sortedKeys(cg.target) {
		if !cg.target[id].equal(before[id]) {
			records = append(records, cgTargetMemberRecord(g.id, id, cg.target[id]))
		}
	}
	records = append(records, cgTargetMetadataRecord(g.id, cg.assignmentEpoch))
	cfg.Logger.Info("consumer group target assignment computed", "group", g.id, "epoch", cg.assignmentEpoch,
		"assignor", name, "members", len(cg.members))
	return records
}

// takeOverStatic gives a restarted static member (new member id) its
// predecessor's state.
func (g *group) takeOverStatic(old *cmember, memberID string, records *[]Record) *cmember {
	cg := g.cg
	g.stopConsumerTimers(old)
	cg.release(old)
	m := newCMember(memberID)
	m.instanceID, m.rackID = old.instanceID, old.rackID
	m.topics, m.regex, m.assignor, m.rebalanceTimeout = old.topics, old.regex, old.assignor, old.rebalanceTimeout
	m.hasMetadata = true
	m.epoch, m.prevEpoch, m.state = old.epoch, old.prevEpoch, old.state
	m.assigned, m.revoking = old.assigned, old.revoking
	delete(cg.members, old.id)
	cg.members[memberID] = m
	cg.target[memberID] = cg.target[old.id]
	delete(cg.target, old.id)
	cg.claim(m)
	*records = append(*records, cgMemberTombstones(g.id, old.id)...)
	*records = append(*records, cgMemberRecord(g.id, m), cgTargetMemberRecord(g.id, memberID, cg.target[memberID]))
	return m
}

// removeConsumerMember removes m (left, fenced or expired) and bumps the
// group epoch; it returns the records saying so.
func (g *group) removeConsumerMember(m *cmember) []Record {
	cg := g.cg
	g.stopConsumerTimers(m)
	cg.release(m)
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
	cg.epoch++
	if len(cg.members) == 0 {
		g.emptySince = g.c.cfg.Now().UnixMilli()
	}
	records := cgMemberTombstones(g.id, m.id)
	return append(records, cgMetadataRecord(g.id, cg.epoch, cg.hash))
}

func (g *group) stopConsumerTimers(m *cmember) {
	m.expirySeq++
	m.revokeSeq++
	if m.expiry != nil {
		m.expiry.Stop()
		m.expiry = nil
	}
}

// scheduleConsumerExpiry (re)starts m's session: without a heartbeat for
// group.consumer.session.timeout.ms the member is removed.
func (g *group) scheduleConsumerExpiry(m *cmember) {
	m.expirySeq++
	if m.expiry != nil {
		m.expiry.Stop()
	}
	seq := m.expirySeq
	m.expiry = time.AfterFunc(g.c.cfg.ConsumerSessionTimeout, func() {
		g.fenceConsumerMember(m, func() bool { return m.expirySeq == seq }, "session expired")
	})
}

// scheduleRevocationTimeout fences m when it has not revoked its
// partitions within its rebalance timeout, as Kafka does.
func (g *group) scheduleRevocationTimeout(m *cmember) {
	m.revokeSeq++
	seq := m.revokeSeq
	d := m.rebalanceTimeout
	if d <= 0 {
		d = g.c.cfg.ConsumerSessionTimeout
	}
	time.AfterFunc(d, func() {
		g.fenceConsumerMember(m, func() bool { return m.revokeSeq == seq && m.state == memberUnrevoked }, "did not revoke its partitions within its rebalance timeout")
	})
}

// fenceConsumerMember removes m from a timer, unless still (checked under
// the locks) says the firing is stale.
func (g *group) fenceConsumerMember(m *cmember, still func() bool, why string) {
	ps := g.part
	ps.writeMu.Lock()
	defer ps.writeMu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cg == nil || g.cg.members[m.id] != m || !still() || g.state == stateDead {
		return
	}
	g.c.cfg.Logger.Info("consumer group member removed", "group", g.id, "member", m.id, "reason", why)
	if err := ps.log.Append(g.removeConsumerMember(m)); err != nil {
		g.c.cfg.Logger.Warn("writing a consumer group member's removal failed", "group", g.id, "err", err)
	}
	ps.nextPos()
}

// unloadConsumer stops the consumer members' timers.
func (g *group) unloadConsumer() {
	if g.cg == nil {
		return
	}
	for _, m := range g.cg.members {
		g.stopConsumerTimers(m)
	}
}

// installConsumer builds a loaded consumer group's state and starts its
// members' sessions: a member that does not heartbeat the new coordinator
// within the session timeout is removed.
func (g *group) installConsumer(l *cgLoaded) {
	cg := newConsumerGroup()
	cg.epoch, cg.assignmentEpoch, cg.hash = l.epoch, l.assignmentEpoch, l.hash
	cg.target = l.targets
	for id, m := range l.members {
		if !m.hasMetadata {
			continue
		}
		cg.members[id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = id
		}
		cg.claim(m)
	}
	for id := range cg.target {
		if cg.members[id] == nil {
			delete(cg.target, id)
		}
	}
	g.cg = cg
	for _, m := range cg.members {
		g.scheduleConsumerExpiry(m)
		if m.state == memberUnrevoked {
			g.scheduleRevocationTimeout(m)
		}
	}
}

// consumerCommitCheck validates an OffsetCommit against a consumer group
// (Kafka's ConsumerGroup.validateOffsetCommit): a member's commit carries
// its member epoch in the generation field, with OffsetCommit v9+.
func (g *group) consumerCommitCheck(memberID string, epoch int32, version int16, transactional bool) int16 {
	cg := g.cg
	if epoch < 0 && len(cg.members) == 0 {
		return 0
	}
	m := cg.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case !transactional && version < 9:
		return kerr.UnsupportedVersion.Code
	case epoch > m.epoch:
		return kerr.FencedMemberEpoch.Code
	case epoch < m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// consumerSubscribedTopics are the topic names the members subscribe to
// (regexes resolved).
func (g *group) consumerSubscribedTopics() map[string]bool {
	_, _, names := g.cg.subscriptions(g.c.topicMetadata())
	for _, m := range g.cg.members {
		for _, t := range m.topics {
			names[t] = true
		}
	}
	return names
}

// hasMembers: classic or consumer members.
func (g *group) hasMembers() bool {
	return g.state != stateEmpty || len(g.members) > 0 || (g.cg != nil && len(g.cg.members) > 0)
}
