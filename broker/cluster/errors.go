package cluster

import "errors"

var (
	// ErrBrokerIDRegistered: another live session holds /brokers/ids/<id>,
	// so a second broker with this id must not start.
	ErrBrokerIDRegistered = errors.New("cluster: broker id is already registered")
	// ErrTopicExists: the topic (or a topic marked for deletion with the same
	// name) is already in /brokers/topics.
	ErrTopicExists = errors.New("cluster: topic already exists")
	// ErrUnknownTopic: the topic is not in /brokers/topics.
	ErrUnknownTopic = errors.New("cluster: unknown topic")
	// ErrInvalidTopic: the name breaks Kafka's topic naming rules or collides
	// with an existing topic once '.' and '_' are treated alike.
	ErrInvalidTopic = errors.New("cluster: invalid topic name")
	// ErrInvalidPartitions: a topic needs at least one partition.
	ErrInvalidPartitions = errors.New("cluster: invalid number of partitions")
	// ErrInvalidReplicationFactor: the replication factor is below one or
	// above the number of live brokers.
	ErrInvalidReplicationFactor = errors.New("cluster: invalid replication factor")
	// ErrInvalidReplicaAssignment: an explicit assignment of new partitions
	// has the wrong number of lists, an empty or repeated replica, an
	// unknown broker, or another replication factor than the topic's.
	ErrInvalidReplicaAssignment = errors.New("cluster: invalid replica assignment")
	// ErrReassignmentInProgress: the topic node lists adding or removing
	// replicas; its partitions cannot be added to meanwhile.
	ErrReassignmentInProgress = errors.New("cluster: a partition reassignment is in progress")
	// ErrNoReassignmentInProgress: a reassignment was cancelled where none
	// is in progress.
	ErrNoReassignmentInProgress = errors.New("cluster: no partition reassignment in progress")
	// ErrNotController: an operation only the controller carries out
	// (ElectLeaders) was asked of another member.
	ErrNotController = errors.New("cluster: this broker is not the controller")
	// ErrElectionNotNeeded: the partition already has the leader the
	// election would give it (preferred), or a live leader (unclean).
	ErrElectionNotNeeded = errors.New("cluster: leader election not needed")
	// ErrPreferredLeaderNotAvailable: the preferred replica is not live or
	// not in the ISR.
	ErrPreferredLeaderNotAvailable = errors.New("cluster: preferred leader not available")
	// ErrEligibleLeadersNotAvailable: no replica of the partition is live
	// to be elected.
	ErrEligibleLeadersNotAvailable = errors.New("cluster: no eligible leader available")
	// ErrInvalidTopicConfig: a topic config override has an empty key.
	ErrInvalidTopicConfig = errors.New("cluster: invalid topic config")
	// ErrInvalidConfig: Config.Validate rejected the member configuration.
	ErrInvalidConfig = errors.New("cluster: invalid member config")
	// ErrClosed: the Member was closed.
	ErrClosed = errors.New("cluster: member closed")
	// ErrFenced: AlterISR found the partition state with another leader or
	// leader epoch than the caller's: the caller was deposed, or the
	// controller rewrote the state (every controller write bumps the
	// epoch). The caller must act on the state in Metadata, which shows the
	// newer one when AlterISR returns.
	ErrFenced = errors.New("cluster: partition leader epoch moved on")
	// ErrInvalidISR: AlterISR was given an ISR that does not hold the
	// leader, repeats a broker or names a broker outside the assignment.
	ErrInvalidISR = errors.New("cluster: invalid ISR")
	// ErrMalformed: a node holds data that does not parse as the Kafka 0.8
	// JSON shape its path calls for.
	ErrMalformed = errors.New("cluster: malformed node data")

	// errStaleController: /controller_epoch moved on, so this controller's
	// writes are fenced off and it must step down.
	errStaleController = errors.New("cluster: controller epoch moved on; stepping down")
)
