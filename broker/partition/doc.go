// Package partition is a broker's local replicas of topic partitions and
// their replication: what a request handler reads and writes (a Replica),
// and what keeps the replicas of a partition in step (a Manager: the
// leader's side, and the follower's fetchers), which also opens and
// releases them as the cluster metadata says (ReconcileTopic). The broker
// drives the reconciliation and serves the led replicas.
//
// # Replica
//
// A Replica pairs a partition's Log (the storage engine's, broker/partlog,
// behind the small Log interface; OpenStorage) with its role and high
// watermark. What it guarantees:
//
//   - The high watermark never passes the log end offset and, while the
//     replica keeps its role, never goes back; consumers read below it.
//     A leader that is its own only in-sync replica answers its log end
//     offset without any bookkeeping (SelfOnly).
//   - A leader's high watermark is the smallest log end offset of the
//     in-sync replicas, counting the replicas of an ISR being written too
//     (Kafka's maximal ISR): nothing is acknowledged that a replica the
//     controller may elect lacks.
//   - Waiters (long-polling Fetch, acks=all Produce) are woken on every
//     append the caller reports (Wake), every move of the high watermark
//     and every change of role, so a wait never outlives a lost
//     leadership.
//
// Topic, Partition, Dir, Log and Settings are fixed at Open; Config is
// replaced atomically; Identity is the reconciler's alone.
//
// # Manager and Partitions
//
// A Manager holds the served replicas, one slot per partition of each
// topic (nil where this broker holds no replica). ReconcileTopic, called
// by the broker's reconciler for each topic of a metadata snapshot, opens
// the replicas this broker holds (Open, at their checkpointed high
// watermarks; a failed open waits for its back-off), reopens those whose
// storage settings changed, gives each its role (ApplyRole), publishes
// the topic's slots copy on write, so that a request holding the previous
// slots stays consistent, and releases the others (Release: role ended,
// waiters woken, log closed, or deleted for a replica reassigned away).
// Where a partition's directory is, what it records (topic id,
// overrides) and deleted topics are the broker's (Local, Remove). The
// request handlers see the Manager only as Partitions: Leader, Replica,
// All, Topics, WaitCommitted, FollowerFetched and LeaderThrottled.
//
// # Replication
//
// Manager.ApplyRole gives a replica the role of the metadata's partition
// state (a new leader epoch resets the followers' positions), hands
// followed replicas to the fetcher of their leader (fetcher.go), and
// ignores a view older than the leader's own ISR write. FollowerFetched records a
// follower's position from its fetch, advances the high watermark and
// adds a caught-up follower to the ISR; RunISRShrinker removes followers
// not caught up for replica.lag.time.max.ms. ISR changes are written by
// compare-and-set through Cluster (cluster.Member.AlterISR), one at a time
// per partition; a leader fenced by a newer epoch leaves the change to
// the metadata. WaitCommitted is acks=all.
//
// A follower's fetcher (one per leader broker, over the inter-broker
// listener, Deps.InterBroker) first truncates a replica that starts a new
// leader epoch to where its latest epoch ends in the leader's log
// (OffsetForLeaderEpoch), then copies the leader's batches unchanged
// (AppendReplica) with Fetch requests carrying this broker's id, taking
// the leader's high watermark and log start offset from each response. A
// replica behind the leader's log start starts over there; a replica the
// leader answers with an error backs off alone (2 ms or 50 ms, doubling
// to 1 s); throttled replicas copy within the follower throttle
// (Deps.Throttle).
//
// # Recovery
//
// Each log directory holds Kafka's replication-offset-checkpoint (format
// frozen: "0\n<count>\n" then "<topic> <partition> <hw>\n" per
// partition), written atomically every 5 s and at the broker's Close. A
// replica opens at its checkpointed high watermark, bounded by its log
// end; a malformed checkpoint is logged and its replicas start from zero.
// Recovering the log itself is broker/partlog's. A partition that fails to
// open is retried with a doubling back-off (1 s to 1 min, OpenFailures),
// and whoever waits on its topic is told the cause, wrapping ErrOpen.
//
// # Concurrency
//
// A Replica is safe for concurrent use: Leading, SelfOnly and the high
// watermark are atomics read on every request without a lock; the rest of
// the replication state (role, epoch, ISR, followers) is under one mutex
// per replica, never held across I/O other than the log's offset reads
// (the ISR write runs in a goroutine that takes it again for the result),
// and the waiters under another, taken after it when both are. The log is
// safe for concurrent Append and Read; a log closed under a request
// answers partlog.ErrClosed, which ErrorCode maps to
// NOT_LEADER_OR_FOLLOWER. A Manager is safe for concurrent use: its
// served topics are under its own lock, and the goroutines it starts (ISR
// writes, one fetcher per leader, the ISR shrinker and the checkpointer
// the broker runs) are counted in Deps.WG and end with Deps.Shutdown.
// ReconcileTopic, Publish, Remove, Open and Release are the reconciler's,
// one goroutine.
package partition
