// Package group is the broker's group coordinator: Kafka's classic group
// protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), the consumer
// group protocol of KIP-848 (ConsumerGroupHeartbeat, ConsumerGroupDescribe),
// committed offsets
// (OffsetCommit, OffsetFetch, OffsetDelete) and group administration
// (ListGroups, DescribeGroups, DeleteGroups), so that every standard
// client's consumer groups work against Tributary brokers.
//
// # Placement
//
// A group belongs to partition PartitionFor(group, n) of the offsets topic
// __consumer_offsets (n is offsets.topic.num.partitions, 50 by default):
// Java's String.hashCode of the group id, sign bit masked, modulo n, as
// Kafka computes it. The broker leading that partition is the group's
// coordinator; the broker hands the partitions it leads to Load and takes
// them back with Unload when leadership moves, so a group's coordinator
// moves when its broker dies. Loading is asynchronous (requests meanwhile
// get COORDINATOR_LOAD_IN_PROGRESS); the broker's FindCoordinator waits
// with AwaitLoaded until the group's partition is loaded before naming
// itself, so that a client's first request to its coordinator is served
// (librdkafka waits seconds before rejoining after a failed JoinGroup).
//
// # Protocol
//
// The broker never reads protocol metadata or assignments (except to learn
// a consumer group's subscriptions for OffsetDelete): members bring their
// own assignors and the leader assigns, as in Kafka. Groups go through
// Kafka's states Empty, PreparingRebalance, CompletingRebalance, Stable
// and Dead, with Kafka's rules: JoinGroup v4+ without a member id gets
// MEMBER_ID_REQUIRED and a member id to come back with (KIP-394); the
// first rebalance of an empty group waits group.initial.rebalance.delay.ms
// for more members; a rebalance completes when every member has rejoined
// or the largest rebalance timeout has passed (members that did not rejoin
// are removed); a member whose session timeout passes without a heartbeat
// (or a join, sync or commit) is removed and the group rebalances. Static
// members (group.instance.id, KIP-345) that restart get a new member id,
// fence the old one with FENCED_INSTANCE_ID and, in a stable group, their
// old assignment without a rebalance (a restarted static leader on
// JoinGroup < v9 makes the group rebalance, since only v9 can tell it to
// skip assigning). Errors are Kafka's: UNKNOWN_MEMBER_ID,
// ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, INCONSISTENT_GROUP_PROTOCOL,
// INVALID_SESSION_TIMEOUT, GROUP_MAX_SIZE_REACHED, NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND,
// GROUP_SUBSCRIBED_TO_TOPIC, OFFSET_METADATA_TOO_LARGE and
// UNKNOWN_TOPIC_OR_PARTITION (a commit for a partition that does not
// exist). A leader's SyncGroup whose assignments add up to more than
// MaxAssignmentBytes fails every member's sync with UNKNOWN_SERVER_ERROR
// (what Kafka answers when the group record is too large) and the group
// rebalances again.
//
// Classic membership is held in memory only: after a coordinator move the
// members get NOT_COORDINATOR, find the new coordinator and join again.
//
// # The consumer group protocol (KIP-848)
//
// A group joined with ConsumerGroupHeartbeat is a consumer-protocol group
// (consumer.go), after Kafka's GroupMetadataManager: the coordinator
// assigns. Its group epoch advances when a member joins or leaves, changes
// its subscription (topic names, or an RE2 regex matched against whole
// topic names) or its server assignor, and when a subscribed topic is
// created, deleted or grows; the target assignment is then recomputed at
// that epoch by the assignor most members ask for (group.consumer.assignors,
// "uniform" first: sticky and balanced, as Kafka's UniformAssignor; or
// "range", contiguous ranges per topic). Each member then reconciles, one
// heartbeat at a time, as Kafka's CurrentAssignmentBuilder does: it keeps
// what stays its own, is told to revoke the rest and stays at its epoch
// until a heartbeat's owned partitions no longer hold them, and only then
// moves to the target epoch and gets the partitions whose previous owner
// has released them (a partition never has two owners; the others come on
// later heartbeats). A member that does not revoke within its rebalance
// timeout, or does not heartbeat for group.consumer.session.timeout.ms, is
// removed. Static members (instance id) leave with epoch -2 keeping their
// partitions, and a restarted instance takes them over under its new
// member id at the same epoch (UNRELEASED_INSTANCE_ID while the old one is
// still in the group). OffsetCommit v9 carries the member epoch: a lower
// one is STALE_MEMBER_EPOCH, a higher one FENCED_MEMBER_EPOCH, and a
// member committing with v8 or lower UNSUPPORTED_VERSION.
//
// The two protocols do not mix: a classic JoinGroup to a consumer group
// with members gets INCONSISTENT_GROUP_PROTOCOL, a ConsumerGroupHeartbeat
// to a classic group with members GROUP_ID_NOT_FOUND; a group without
// members (only offsets) becomes whichever protocol joins it. Online
// conversion of a live group (Kafka's group.consumer.migration.policy) is
// not implemented. DescribeGroups of a consumer group answers
// GROUP_ID_NOT_FOUND and ConsumerGroupDescribe of a classic one too, as
// Kafka does (admin clients try one, then the other).
//
// A consumer group is persisted, unlike classic membership, in Kafka's
// record types (consumerrecords.go, frozen): ConsumerGroupMetadata (3:
// group epoch, metadata hash), ConsumerGroupMemberMetadata (5),
// ConsumerGroupTargetAssignmentMetadata (6) and ...Member (7),
// ConsumerGroupCurrentMemberAssignment (8: member epoch, previous epoch,
// state, assigned and pending-revocation partitions by topic id), each
// appended before the heartbeat that made it is answered, tombstones when
// a member or the group goes. A load replays them, so the new coordinator
// of a moved partition resumes the group: members keep their ids, epochs
// and partitions and go on heartbeating, and their sessions restart at
// the load.
//
// # Offsets: format and truth
//
// Committed offsets are records of the group's offsets partition, in
// Kafka's own format (frozen): key OffsetCommitKey v1 (group, topic,
// partition), value OffsetCommitValue v3 (offset, leader epoch, metadata,
// commit timestamp), a null value deleting the offset. A commit is
// acknowledged only after its records are appended to the log, and
// loading replays it. The broker creates the offsets topic compacted
// (cleanup.policy=compact, as Kafka; one created with retention.ms=-1 by an
// older version is switched to compact when the broker loads a partition
// of it), so the log cleaner keeps only each key's last record: a group
// committing every few seconds for a year leaves one record per partition,
// and a load reads that, not every commit.
//
// # Offset expiry
//
// ExpireOffsets (the broker calls it every offsets.retention.check.interval.ms,
// 10 minutes by default) deletes offsets as Kafka >= 2.1 does (KIP-211),
// OffsetsRetention (offsets.retention.minutes, 7 days) after: for a group
// that had members and is Empty, the moment it became empty, for all its
// offsets at once; for a group that never had members here (a standalone
// consumer's manual commits), each offset's commit. Offsets of a group with
// members never expire. Each expired offset gets a tombstone in the log
// (the cleaner drops it after delete.retention.ms) and is removed from the
// registry; a group left without offsets is removed. Membership is not
// persisted (Kafka keeps the empty-since time in its group metadata
// records), so offsets read back at a load count as committed no earlier
// than the load: a coordinator move restarts the clock rather than expire
// a group whose members have not rejoined yet.
//
// The offsets topic is replicated like any other topic: the broker creates
// it with offsets.topic.replication.factor replicas (3 by default, capped at
// the live brokers), and Log.Append returns, as Kafka's coordinator appends
// with acks=all, once the partition's in-sync replicas have the records (or after 5 s,
// Kafka's offsets.commit.timeout.ms default: the commit then stands on the
// leader alone and the broker logs a warning). A new leader elected from the
// ISR therefore holds every commit acknowledged in time, and the log is the
// truth.
//
// Every commit is also written through, best effort, to the Registry when
// the broker runs in a cluster: the paper's ZooKeeper registry
// /consumers/<group>/offsets/<topic>/<partition> (decimal next offset, as
// Kafka 0.8 and this repository's client write it), so ZooKeeper-group
// consumers and monitoring that reads ZooKeeper see Kafka-protocol groups'
// progress. On load, a registry offset modified after the log's commit time
// of that partition (or absent from the log) wins. That carries over what
// the new leader's log may lack (a commit that timed out waiting for its
// followers, a partition of one replica because one broker was alive when
// the topic was created, an unclean election) and lets the Kafka-protocol
// group see offsets that ZooKeeper-group consumers of the same group id
// committed before the load. Known limits in those cases, where the new
// leader's log is stale: an offset deleted (DeleteGroups, OffsetDelete)
// while another broker led the partition can come back, and a commit whose
// registry write failed as well is lost.
//
// # Transactional offsets
//
// TxnOffsetCommit appends a transactional batch of the producer and holds
// its offsets pending until the transaction's marker (TxnMarker): COMMIT
// makes each the committed offset unless a plain OffsetCommit of the same
// partition was appended after it (Kafka keeps whichever record was
// appended later; the coordinator orders appends, and a load orders
// records, by their position in the partition), ABORT drops them. A
// plain tombstone (OffsetDelete, DeleteGroups, expiry) deletes the
// pending offsets of its partition too, as Kafka's replay does;
// DeleteGroups writes tombstones for the partitions only open transactions
// commit as well, and expiry skips an offset an open transaction commits
// over. A load replays the same rules, so it reaches the state served.
//
// # Concurrency
//
// A Coordinator is safe for concurrent use. Which offsets partitions are
// served, loading or loaded, is a partset.Set (shared with the transaction
// coordinator); Coordinator.mu guards the partitions' contents (groups,
// markers that arrive while loading), and a load installs its groups and
// marks the partition loaded in one step under it. Lock order:
// Coordinator.mu before a group's mu and before the set's lock (the
// innermost); an offsets partition's writeMu before Coordinator.mu and a
// group's mu. The set calls Unload's hook, which takes Coordinator.mu,
// without its lock, so Load, Unload and Close are never called holding
// Coordinator.mu.
// Joins and syncs block their request until the rebalance answers them;
// timers (session, rebalance, initial delay) run under the group's mu and
// ignore firings that a later event made stale. A consumer-protocol
// heartbeat, and the timers removing consumer members, hold the
// partition's writeMu and the group's mu across their append.
package group
