package cluster

import (
	"slices"
	"strings"
)

// Snapshot is the cluster metadata as one Member last saw it. It is
// immutable: its maps and slices are shared between callers, who must not
// modify them.
type Snapshot struct {
	// Brokers are the live (registered) brokers, sorted by id.
	Brokers []Broker
	// Controller is the id of the elected controller, -1 when there is none.
	Controller int32
	// ControllerEpoch counts controller elections (/controller_epoch); 0
	// before the first.
	ControllerEpoch int32
	// Topics maps a topic name to its partitions and config overrides.
	Topics map[string]Topic
	// ShuttingDown lists the live brokers in controlled shutdown (they
	// hold /tributary/shutting_down/<id>), sorted. The controller moves
	// leadership away from them and drops them from ISRs.
	ShuttingDown []int32
	// BrokerConfigs are the dynamic broker configs of /config/brokers,
	// keyed by entity: DefaultBrokerEntity or a broker id in decimal.
	// Malformed nodes are left out (and logged once).
	BrokerConfigs map[string]map[string]string

	// session is the coordination session whose watches built the
	// snapshot; the controller acts only on snapshots of its own session.
	session int64
	// deleting lists the topics with a pending deletion request, sorted.
	deleting []string
	// zkReassign is /admin/reassign_partitions, nil when absent.
	zkReassign *nodeValue
}

// Broker is a live broker's registration.
type Broker struct {
	ID   int32
	Host string
	Port int32
	// Rack is empty when the broker has none.
	Rack string
	// Endpoints are the advertised listeners, "NAME://host:port".
	Endpoints []string
	// Protocols maps listener names to security protocols
	// (listener_security_protocol_map); nil in registrations older than
	// Kafka 2.0's, whose listener names are protocol names.
	Protocols map[string]string
}

// Endpoint returns the broker's advertised address on the named listener
// (upper case); false if it has none.
func (b Broker) Endpoint(listener string) (host string, port int32, ok bool) {
	for _, ep := range b.Endpoints {
		name, h, p, err := parseEndpoint(ep)
		if err == nil && strings.EqualFold(name, listener) {
			return h, p, true
		}
	}
	return "", 0, false
}

// Topic is a topic's assignment, leadership and configuration.
type Topic struct {
	Name string
	// ID is the topic id (Kafka's UUID text form) from the topic node's
	// topic_id, or from the legacy config key of a topic not migrated yet;
	// "" until the controller has assigned one to a topic written without.
	ID string
	// Partitions are indexed by partition id.
	Partitions []Partition
	// Configs are the overrides of /config/topics/<topic>; nil when the node
	// is missing.
	Configs map[string]string
	// Deleting is true once deletion was requested and until the controller
	// has removed the topic.
	Deleting bool
	// version is the topic node's version, for a writer awaiting its
	// write in the metadata.
	version int32
}

// Partition is one partition's replica assignment and leadership.
type Partition struct {
	ID int32
	// Leader is the leading broker, -1 when no replica is live or the
	// controller has not elected one yet (Kafka's LEADER_NOT_AVAILABLE).
	Leader int32
	// LeaderEpoch increases with every leadership change; -1 before the
	// first election.
	LeaderEpoch int32
	// Replicas is the assignment, preferred leader first.
	Replicas []int32
	// ISR is the in-sync replica set, written by the controller (elections,
	// dead or shutting-down brokers removed) and by the leader (AlterISR).
	// With no live ISR member and no unclean election Kafka keeps the last
	// ISR, and so do we.
	ISR []int32
	// OfflineReplicas are the assigned replicas whose broker is not live
	// (not registered), in assignment order; nil when all are live.
	OfflineReplicas []int32
	// AddingReplicas and RemovingReplicas are a reassignment in progress
	// (the topic node's adding_replicas and removing_replicas; Replicas
	// then holds both the target and the original replicas): nil when
	// none.
	AddingReplicas, RemovingReplicas []int32

	// stateVersion is the state node's version, -1 when there is none.
	stateVersion int32
}

// StateVersion is the version of the partition's state node (leader, epoch
// and ISR) this view was read at, -1 when there is none: a replica that
// knows a newer state (its own AlterISR) ignores a view older than it.
func (p Partition) StateVersion() int32 { return p.stateVersion }

// Broker returns the live broker with id.
func (s Snapshot) Broker(id int32) (Broker, bool) {
	i, ok := slices.BinarySearchFunc(s.Brokers, id, func(b Broker, id int32) int { return int(b.ID) - int(id) })
	if !ok {
		return Broker{}, false
	}
	return s.Brokers[i], true
}

// IsShuttingDown reports whether broker id is in controlled shutdown.
func (s Snapshot) IsShuttingDown(id int32) bool {
	_, ok := slices.BinarySearch(s.ShuttingDown, id)
	return ok
}

// Partition returns partition p of topic.
func (s Snapshot) Partition(topic string, p int32) (Partition, bool) {
	t, ok := s.Topics[topic]
	if !ok || p < 0 || int(p) >= len(t.Partitions) {
		return Partition{}, false
	}
	return t.Partitions[p], true
}

// TopicNames returns the topic names, sorted.
func (s Snapshot) TopicNames() []string {
	names := make([]string, 0, len(s.Topics))
	for n := range s.Topics {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// markOffline fills every partition's OfflineReplicas from the live
// brokers. The partitions are fresh copies made for this snapshot.
func (s *Snapshot) markOffline() {
	for _, t := range s.Topics {
		for i := range t.Partitions {
			p := &t.Partitions[i]
			p.OfflineReplicas = nil
			for _, r := range p.Replicas {
				if _, live := s.Broker(r); !live {
					p.OfflineReplicas = append(p.OfflineReplicas, r)
				}
			}
		}
	}
}
