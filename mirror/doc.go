// Package mirror is the mirror daemon of the Kafka paper (§4): embedded
// consumers pull the topics of one or more source clusters (the online
// datacenters) into a target cluster (the analytics cluster), in order,
// losing nothing, audited. `tributary mirror --config mirror.properties`
// runs it; New(cfg, counter).Run(ctx) embeds it.
//
// # Groups
//
// Each source is consumed by group.id on that source. With
// source.NAME.zookeeper.connect (or SourceConfig.Coordinator) the group is
// the paper's ZooKeeper consumer group of package client (one member per
// topic and process, offsets in /consumers/<group>/offsets); otherwise it is
// the Kafka group protocol through the source brokers' group coordinator
// (franz-go's group consumer), which Apache Kafka sources have. Several
// mirror processes with one configuration share the partitions; when one
// dies, the others take its partitions over from its last commit.
//
// # Topics
//
// Every topic.refresh.interval.ms (and at start) each source's topics are
// listed; those matching topics (a regular expression over whole names) and
// not topics.exclude, plus __audit, are mirrored. Other names starting with
// "__" (internal topics) never are. A missing target topic is created with
// the source's partition count and its explicitly set configs, and
// target.replication.factor replicas (unset: the target broker's choice,
// for __audit its audit.topic.replication.factor). A source topic that
// grew gets its new target partitions (CreatePartitions) at the next
// refresh, or before the first record of a new partition when the group
// hands it out sooner; the target producer's metadata is refreshed until
// it shows them (grow.go). A topic deleted at the source stops its
// partitions.
//
// # Replication policies and loops
//
// replication.policy.class takes MirrorMaker 2's class names (policy.go):
// DefaultReplicationPolicy names the target topic
// "<S><replication.policy.separator><T>" ("dc1.pageviews"),
// IdentityReplicationPolicy keeps T; without it topic.rename applies
// (setting both is ErrInvalidConfig). Loops cannot form in active-active
// mirroring (dc1 ⇄ dc2, each mirror's target.name the other's source
// name): a record whose origin header (any of them) names target.name is
// never mirrored back, under every policy (it is passed over and its
// offset committed); under the default policy a topic whose name says it
// came from the target at any hop ("<target>.<x>", "dc3.<target>.<x>",
// MirrorSourceConnector.isCycle) is not mirrored, nor, under either
// policy, MirrorMaker 2's internal topics (ReplicationPolicy.isInternalTopic:
// names starting with "." or "__", ending with ".internal" or
// "-internal"). The mirror's own internal topics are never mirrored.
//
// # Offset syncs and checkpoints
//
// With emit.checkpoints.enabled (default on under a replication policy,
// off otherwise, refused with exactly.once) every record the target
// acknowledges extends its partition's run of consecutive source and
// target offsets (the target offset is the produce acknowledgement's);
// runs go to OffsetSyncsTopic on the target (package mirror/offsetsync
// owns the format and the exact translation) at every
// emit.checkpoints.interval.seconds and at the drain (syncs.go). At the
// same interval the checkpointer (checkpoints.go) reads the syncs,
// fetches the committed offsets of every source group matching groups and
// not groups.exclude (never group.id), translates those of mirrored
// topics to the first target record at or past the commit, and writes
// the changed ones as MirrorMaker 2 checkpoints (package mirror/checkpoint)
// to CheckpointsTopic(S) ("<S>.checkpoints.internal", compacted, one
// partition, which RemoteClusterUtils.translateOffsets reads). An offset
// past what was mirrored is not checkpointed until it is. With
// sync.group.offsets.enabled (KIP-545) the translations are committed to
// the target group of the same name while it has no member there, never
// moving an offset back. A commit made less than an interval before a
// source is lost is not translated: the group resumes from the previous
// checkpoint. Translate does the same translation for one group on demand
// (`tributary mirror translate`).
//
// # Records (frozen format)
//
// Source partition p of topic T from source S goes to partition p of the
// target topic named by the replication policy or topic.rename(S, T)
// ("${topic}" by default; __audit keeps its name). Key, value, headers and timestamp are copied byte for byte, and a
// header origin.Header = "<S>/<p>/<offset>" is appended (package
// mirror/origin owns the format and parses it), so a consumer downstream can drop duplicates exactly.
//
// # Delivery and recovery
//
// At-least-once, in order per source partition: the target producer is
// idempotent with acks=all, and a source offset is committed only after the
// target acknowledged every record before it (franz-go completes the
// records of one target partition in order). After a crash the partition's
// next owner starts at the last commit, so what was mirrored since is
// mirrored again, each copy with the same origin header. Records sent and
// not yet acknowledged are bounded by buffer.max.records and buffer.memory;
// when either is reached the mirror stops fetching (back-pressure). A target
// that is down or refuses with a retriable error is retried with back-off
// for ever, and logged; a record the target can never take (larger than its
// max.message.bytes) stops its source partition with an error naming
// topic, partition and offset (ErrPartitionStopped), and that partition's
// offset is never committed past it. A partition stopped by a refusal an
// operator fixes at the target (a missing ACL: retriable) is retried after
// stopped.partition.retry.ms: the source's consumer drains, commits,
// leaves its groups and joins again from the commits, every partition of
// that source starting afresh (retry.go). Stopping (ctx end, SIGTERM) stops
// fetching, waits up to shutdown.timeout.ms for the target's
// acknowledgements, commits and leaves the groups.
//
// # Exactly once
//
// With exactly.once=true (eos.go; Kafka's KIP-618) a source has no group:
// one consumer with isolation.level=read_committed reads every partition
// of its mirrored topics, starting at the offsets stored on the target in
// group "<group.id>-<source>" (OffsetFetch require_stable; else
// auto.offset.reset). Each poll is one transaction of the target producer
// transactional.id "<transactional.id.prefix>-<source>" (prefix default
// group.id): the records (origin header as above), the tier's audit events
// counting them (to the target's __audit, in the same transaction: not
// the Counter New is given, which is nil here), and the source offsets
// after them (AddOffsetsToTxn, TxnOffsetCommit), then EndTxn. A failed
// transaction is aborted and its partitions rewound to the target-stored
// offsets. So a read_committed reader of the target, and of __audit (the
// audit service reads it so), sees each source record and each count once
// whatever crashes: an aborted transaction's records and counts are never
// visible, a committed one's always together with its offsets. A starting
// process fences the previous holder of the transactional.id
// (InitProducerId; its open transaction is aborted), and a fenced one
// stops Run with ErrFenced: run one process per configuration.
// source.NAME.zookeeper.connect is refused with it (ErrInvalidConfig).
// A record too large for the target stops its partition as above.
//
// # Audit and metrics
//
// The mirror is audit tier "mirror" in cluster target.name: it counts each
// record the target acknowledged, per target topic and window of the
// record's timestamp (not __audit). A source offset is committed only after
// the counts of the records before it were published (marks.go): a mirror
// killed after a commit has published what the commit covers, so the tier
// never counts less than reached the target (the records repeated after a
// kill are counted again: a surplus, never a false loss). Prometheus series are registered on
// Config.Registerer: tributary_mirror_records_total and _bytes_total,
// _lag_records per owned source partition, _seconds_since_commit,
// _buffered_records and _buffered_bytes, _stopped_partitions, _rebalances_total,
// and with checkpoints _checkpoint_age_seconds per source and group.
//
// # Concurrency
//
// A Mirror is run once; Run blocks until its ctx ends and the drain is over.
// Records of one source partition are handled by one goroutine at a time.
package mirror
