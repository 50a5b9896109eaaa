// Package broker is Tributary's Kafka-protocol server: it accepts Kafka
// clients (franz-go, librdkafka/kcat, the Java client) on its listeners
// (PLAINTEXT or TLS) and
// serves ApiVersions, Metadata, CreateTopics, DeleteTopics, Produce, Fetch,
// ListOffsets (v0 too), InitProducerId, DescribeConfigs,
// IncrementalAlterConfigs and OffsetForLeaderEpoch on top of the storage
// engine in broker/partlog, and the group coordinator's APIs (FindCoordinator,
// JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
// ListGroups, DescribeGroups, DeleteGroups, OffsetDelete, and KIP-848's
// ConsumerGroupHeartbeat and ConsumerGroupDescribe, with the topics of the
// metadata snapshot for the coordinator's assignments) through
// broker/group, and the operators' APIs (below).
// DescribeUserScramCredentials and AlterUserScramCredentials read and write
// the SCRAM credentials of /config/users through broker/sasl (scram.go).
// The configuration, server.properties and the topic-level configs, is
// broker/config's.
//
// # Listeners and TLS
//
// Start binds every listener of listeners (listeners.go), NAME://host:port
// with its protocol from listener.security.protocol.map, and runs one
// accept loop per listener; all of them feed serveConn. A connection
// carries its listener (Name, Protocol) and principal (server.go's
// connection): SSL and SASL_SSL listeners wrap accepted connections in
// crypto/tls (network.ListenKafkaTLS) with a security.Server whose
// certificates are reloaded when their files change; the handshake runs in
// the connection's goroutine under ssl.handshake.timeout.ms, after the
// connection counted against max.connections, and a failure closes that
// connection only (rate-limited warning, bad_requests_total{reason=
// "tls_handshake"}). The principal is User:<certificate subject mapped by
// ssl.principal.mapping.rules> or User:ANONYMOUS until a SASL login
// replaces it with User:<name>.
//
// SASL (saslhandshake.go, saslauthenticate.go, broker/config's saslconfig.go; the
// mechanisms are broker/sasl's): on a SASL_* listener only ApiVersions and
// SaslHandshake (v0–1; after v0 the tokens are bare frames) are served
// before the login, then SaslAuthenticate (v0–2); anything else closes the
// connection, as does a refused login (after SASL_AUTHENTICATION_FAILED),
// an unsupported mechanism (after UNSUPPORTED_SASL_MECHANISM) or no login
// within sasl.handshake.timeout.ms. The SASL state belongs to the
// connection's serving goroutine; requests are handled in order, so the
// gate sees them as the client sent them. With connections.max.reauth.ms a
// session expires: re-authentication (same mechanism, same principal) is
// served after expiry too, any other request closes the connection.
// Failures are logged rate-limited per listener. zookeeper.set.acl with
// zookeeper.digest.auth protects the broker's ZooKeeper nodes
// (internal/coord/zkcoord), /config/users readable by the brokers only.
//
// The registration lists every listener's advertised endpoint and the
// listener protocol map; Metadata and FindCoordinator answer with each
// broker's endpoint on the listener the request arrived on and leave out
// brokers without it. Replica fetchers connect to the leader's endpoint on
// the inter-broker listener (inter.broker.listener.name or
// security.inter.broker.protocol), over TLS with that listener's settings
// when its protocol is SSL, logged in with
// sasl.mechanism.inter.broker.protocol and the broker's own credentials
// (listener.name.<inter>.<mechanism>.sasl.jaas.config) when it is SASL. Under TLS, Fetch record bytes are copied
// through the TLS writer, not sent with sendfile.
//
// # Authorization
//
// With authorizer.class.name set (authorize.go), the broker/acl
// Authorizer decides every request; its cache is filled at Start (before
// clients are accepted) by an acl.Store following Kafka's ACL nodes in the
// coordination service, and b.authz is nil otherwise, so each check is a
// nil test. Handlers call authorize/authorizeTopic/authorizeGroup/
// authorizeCluster (logging and counting a refusal) or authorizeQuiet (for
// fallbacks and for filtering what is listed); the group APIs' filtering
// is in authorize_groups.go. CreateAcls, DescribeAcls and DeleteAcls
// (createacls.go, describeacls.go, deleteacls.go) write through the store
// and read the cache; without an authorizer they answer
// SECURITY_DISABLED.
//
// # Operations
//
// CreatePartitions (createpartitions.go) grows a topic through
// cluster.Member.AddPartitions and answers once the new partitions have
// leaders. ElectLeaders (electleaders.go) is carried out by the
// controller (cluster.Member.ElectLeaders; another broker answers
// NOT_CONTROLLER). DeleteRecords (deleterecords.go) moves the leader's log
// start offset (broker/partlog DeleteRecordsBefore, persisted in the
// partition's log-start-offset file); followers move theirs up to the
// LogStartOffset of their fetch responses, and ListOffsets from replica id
// -2 (Kafka's debugging replica) is answered by a follower too, so that
// every replica's start can be checked. As in Kafka, the response waits
// until the low watermark (the lowest log start of the leader and its
// in-sync followers, which report theirs in every fetch) reaches the
// requested offset. DescribeLogDirs
// (describelogdirs.go) lists every local replica under its log.dirs
// entry, and a replica moving to another entry there too as Kafka's future
// replica. AlterReplicaLogDirs (alterreplicalogdirs.go) moves a replica
// between log.dirs: a copy in <topic>-<p>.<id>-future, throttled by
// replica.alter.log.dirs.io.max.bytes.per.second, swapped by the
// reconciler with two renames that a restart completes or undoes, so a
// crash leaves one good copy. DescribeCluster (describecluster.go) reports what Metadata does
// about brokers; the legacy AlterConfigs (alterconfigs_legacy.go) replaces
// a topic's overrides, validated as IncrementalAlterConfigs validates.
//
// AlterPartitionReassignments and ListPartitionReassignments (reassign.go)
// record and list reassignments in the topic nodes (KIP-455's
// adding_replicas and removing_replicas, through
// cluster.Member.AlterReassignments); the added replicas open the
// partition and follow its leader, which takes them as followers under the
// same epoch, and the controller completes the move once they are in the
// ISR. A broker that is no longer a replica of a partition deletes its
// data. Replication throttles (throttle.go) bound what out-of-sync
// followers of the throttled replicas copy.
//
// Dynamic broker configs (dynconfig.go; /config/brokers/<id> and
// <default>, byte for byte what Kafka's ConfigCommand writes) apply
// without a restart: the topic defaults (log.retention.ms, ...), the
// replication throttle rates, max.connections, max.connections.per.ip and
// its overrides (for the next connections), the broker-wide
// log.cleaner.threads, dedupe buffer, I/O rate and backoff (the cleaner
// is resized between cleanings), and per broker the listeners' keystores
// and truststores (listener.name.<l>.ssl.keystore.location, ...: new
// connections get the new certificate; passwords are refused, as Kafka
// keeps them encrypted with password.encoder.secret).
//
// # Client quotas
//
// DescribeClientQuotas and AlterClientQuotas (describeclientquotas.go,
// alterclientquotas.go; v0-1) read and write Kafka's quota nodes in
// /config/users and /config/clients through broker/quota, whose store,
// started with the broker and loaded before clients are accepted, follows
// the change notifications (broker/entityconfig), so quotas written by
// any broker or by Kafka's `kafka-configs --zookeeper` apply everywhere
// without a restart. clientquota.go charges requests: Produce its request
// bytes (producer_byte_rate), a consumer's Fetch its record bytes
// (consumer_byte_rate), every request but ApiVersions, SASL and replica
// fetches its handler time (request_percentage), partition creation
// controller_mutation_rate (quota.go). Over a quota, the response carries
// throttle_time_ms and the connection is then muted: neither the reader
// nor the serving goroutine takes another request until the throttle ends
// (KIP-219); versions before KIP-219 get the response after the throttle.
// A throttled Fetch is answered without records and not charged.
//
// # Group coordinator
//
// The partitions of __consumer_offsets are opened and served like any
// other; after every reconciliation runGroupLoader (groups.go) loads the
// ones this broker leads into the coordinator and unloads the others, so a
// group's coordinator is the leader of its offsets partition. The first
// FindCoordinator creates the topic. In a cluster, committed offsets are
// also written through to /consumers/<group>/offsets in the coordination
// service (see broker/group for which store is the truth).
//
// # Transactions, the partition side
//
// A partition leader serves transactional data as Kafka >= 2.5 does
// (txnlog.go; the storage rules are broker/partlog's): Produce with a
// transactional.id needs Write on that TransactionalId, the log checks
// transactional batches (a producer id, no control batches from clients:
// INVALID_RECORD; INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE). Before
// the first transactional batch of a producer on a partition is appended,
// the producer's transaction coordinator verifies that the partition is in
// its ongoing transaction (KIP-890 part 1, txnverify.go:
// transaction.partition.verification.enable, AddPartitionsToTxn v4
// verify-only to a remote coordinator; INVALID_TXN_STATE and nothing
// appended when it is not), guarded until the append against a marker
// written in between. WriteTxnMarkers (writetxnmarkers.go, ClusterAction) appends each
// COMMIT/ABORT marker stamped with the leader epoch and answers once the
// in-sync replicas have it; for __consumer_offsets partitions it then
// calls the TxnMarkerListener (SetTxnMarkerListener, a no-op by default),
// through which the group coordinator applies or drops a producer's
// pending transactional offsets. Fetch with isolation_level
// read_committed returns data below the last stable offset, reports it,
// and lists the aborted transactions from the fetch offset to it;
// ListOffsets latest with read_committed answers the LSO.
// DescribeProducers (describeproducers.go, Read on the topic) lists a led
// partition's producers with their ongoing transactions. Followers rebuild
// the same state from the replicated batches and markers.
//
// # Transaction coordinator
//
// The partitions of __transaction_state are served the same way as those
// of __consumer_offsets: runGroupLoader (groups.go, syncCoordinatorPartitions
// for both internal topics) loads the ones this broker leads into the
// transaction coordinator (broker/txn) at their leader epoch, the
// coordinator epoch of its markers. The first FindCoordinator of key type
// 1 creates the topic (transaction.state.log.*). txns.go wires the
// coordinator: producer ids from the broker's blocks, markers sent as
// WriteTxnMarkers to each partition's leader over the inter-broker
// listener (txnMarkerWriter), the timeout and expiry loops. One handler
// file per API: initproducerid.go, addpartitionstotxn.go,
// addoffsetstotxn.go, endtxn.go, txnoffsetcommit.go (to the group
// coordinator), describetransactions.go, listtransactions.go.
//
// # Internal topics
//
// The broker creates its internal topics on first use, as Kafka does, with
// a replication factor capped at the live brokers it knows of, so that a
// small cluster still gets them and a cluster of three or more survives a
// dead broker: __consumer_offsets (on the first FindCoordinator,
// offsets.topic.*) and __audit (AuditTopic, when a publisher's Metadata
// request auto-creates it or a CreateTopics leaves its layout to the
// broker, audit.topic.*; audittopic.go). An explicit partition count or
// replication factor in a CreateTopics is the creator's.
//
// # Wire format
//
// Frames are Kafka's: a big-endian int32 size, then the request header
// (api key, version, correlation id, client id, tagged fields for flexible
// versions) and the body. Every request and response body is encoded and
// decoded with github.com/twmb/franz-go/pkg/kmsg; the only bytes this package
// produces by hand are the frame size, the response header and, for Fetch,
// the length prefixes of record sets that are streamed from segment files.
// ApiVersions advertises exactly the version ranges in apiTable.
//
// # Old request versions
//
// Some clients never ask ApiVersions and pick versions from a configured
// broker version instead. What they send (from their sources, and for
// kcat 1.7.1/librdkafka 2.0.2 from frames captured in
// TestKcatOldProtocolVersions):
//
//	client                                sends                                   here
//	Burrow 1.2.x (any kafka-version)      ListOffsets v0 for end offsets          served
//	Sarama, Version < 0.10.1              ListOffsets v0 (>= 0.10.1: v1)          served
//	Sarama, Version < 0.10                Metadata v0                             served
//	Sarama <= 1.31, any Version           OffsetCommit v1, OffsetFetch v1         served
//	Sarama, Version < 0.11                Fetch v0-v3, Produce v0-v2              refused
//	librdkafka, fallback 0.9.0 / 0.8.2    Metadata v0, ListOffsets v0             served
//	                                      FindCoordinator/JoinGroup/SyncGroup/
//	                                      Heartbeat v0, OffsetFetch v1            served
//	                                      Fetch v1 / v0, Produce v1 / v0          refused
//	librdkafka, fallback >= 0.10.0        ApiVersions first, then current ones    served
//
// ListOffsets v0 answers Kafka's legacy list (listoffsets.go): segment base
// offsets by file modification time plus the end offset, newest first, up
// to max_num_offsets. Versions that carry the old message formats (Produce
// < 3, Fetch < 4) stay refused, and so do OffsetCommit v0 and OffsetFetch
// v0, whose Kafka semantics are offsets kept in ZooKeeper outside the group
// coordinator. A refused API or version closes the connection, as in
// Kafka, with a warning naming the API, version and client id, logged at
// most once a second per API and version (unsupported.go).
//
// Fetch responses are written in pieces so that record bytes go from the
// segment files to the socket with sendfile: the response is encoded with a
// random 8-byte marker in place of each partition's records, the markers are
// located in the encoded bytes and replaced, at write time, by the length
// prefix and the file region. If a marker is not found exactly once the
// records are copied instead.
//
// # Cluster
//
// Every broker is a member of a cluster (broker/cluster): with
// zookeeper.connect it joins through ZooKeeper (internal/coord/zkcoord),
// with WithCoordinator through the given sessions (brokers of one process
// sharing a memcoord server), and otherwise alone on a memcoord server of
// its own. Start binds the listeners, joins with their bound (or
// advertised) addresses, and accepts clients only once it serves what it leads; joining
// fails with an error wrapping cluster.ErrBrokerIDRegistered when the id is
// taken by a broker with other endpoints, or coord.ErrUnavailable when
// ZooKeeper does not answer within zookeeper.connection.timeout.ms. A
// registration with this broker's own endpoints is its killed predecessor's
// (a restart right after a crash): the join waits, up to the session timeout
// plus cluster.StaleRegistrationSlack, for ZooKeeper to expire it.
//
// Topic existence, partition counts and leaders come from the member's
// metadata snapshot in every mode. One reconciler goroutine follows the
// snapshot: it opens the logs of the partitions this broker is a replica
// of, gives each its role (leader or follower of the snapshot's leader
// epoch), closes the others and deletes the local data of topics that left
// the metadata. Produce, Fetch and ListOffsets serve only the partitions
// this broker leads; another gets NOT_LEADER_OR_FOLLOWER, an unknown one
// UNKNOWN_TOPIC_OR_PARTITION.
//
// # Replication
//
// Kafka's, coordinated through ZooKeeper watches rather than
// LeaderAndIsr requests (broker/cluster/doc.go says who writes the state
// nodes). The local replicas and their replication, both sides, are
// broker/partition's: a partition.Replica is a partition log with its role
// and high watermark, and the handlers reach the replicas only through
// the partition.Partitions interface (Leader, Replica, All, Topics,
// WaitCommitted, FollowerFetched, LeaderThrottled); replication.go lends
// partition.Manager the broker's services (partition.Deps: the member,
// the inter-broker listener, the follower throttle, metrics, rate-limited
// logs, shutdown). The reconciler (reconcile.go) follows the metadata and
// hands each topic to partition.Manager.ReconcileTopic, which opens,
// reopens, releases and gives roles to its replicas; where their
// directories are (log.dirs, identity files, moves between log.dirs) and
// deleting a topic's data stay the broker's.
// A leader stamps its leader epoch into every batch it appends;
// followers (broker/partition's fetcher.go, one fetcher per leader broker) copy the
// batches unchanged with Fetch requests carrying their broker id, after
// first truncating, on every new leader epoch, to where their latest epoch
// ends in the leader's log (OffsetForLeaderEpoch). A follower whose log
// ends below the leader's log start (a new or emptied replica, one left
// behind by retention or DeleteRecords) is answered OFFSET_OUT_OF_RANGE
// with the leader's log start offset and high watermark, and starts over
// there (Kafka's truncateFullyAndStartAt; a leader that gives no log start
// is asked with ListOffsets earliest). A partition the leader answers with
// an error is left out of its fetcher's requests for its own back-off (2
// ms or 50 ms, doubling to 1 s), as Kafka delays a failed partition, while
// the others are fetched at once. The leader (broker/partition's
// Manager) tracks each follower's fetch offset, advances the high watermark to the
// smallest log end offset of the ISR, removes from the ISR a follower not
// caught up for replica.lag.time.max.ms and adds back one that reached the
// high watermark, writing the ISR with compare-and-set (Member.AlterISR).
// While such a write is in flight the high watermark counts on the replicas
// of both the old and the new ISR (Kafka's maximal ISR): the controller may
// elect a follower from the written ISR before the leader learns that the
// write landed, so nothing is acknowledged without it; and a leader ignores
// a metadata view of its partition older than its own write.
// Consumers read only below the high watermark, and ListOffsets' latest is
// the high watermark; a leader that is its own only in-sync replica (every
// single-replica partition) answers its log end offset without any
// bookkeeping. acks=all is refused with NOT_ENOUGH_REPLICAS while the ISR
// is smaller than min.insync.replicas, and otherwise answered once the high
// watermark passes the batch (REQUEST_TIMED_OUT after the request's
// timeout). The high watermarks are checkpointed in each log directory's
// replication-offset-checkpoint (Kafka's format; broker/partition) every
// 5 s and at close.
// Close first hands leadership away (controlled.shutdown.enable): the
// controller moves it to other in-sync replicas before the broker stops.
// Then it stops accepting, lets every connection finish the requests it has
// read, and closes them; a connection that has answered nothing but
// ApiVersions is reset rather than ended, since franz-go fails a request
// outright on an end of stream before a connection's first response (it
// suspects TLS or SASL) but retries after a reset. Topic administration goes through the member
// (the controller assigns and elects) and waits for the reconciler to serve
// the result. A standalone broker keeps its coordination tree durably in
// CoordinationDir of its first log dir (memcoord.Open), so its topics,
// configs, ACLs, SCRAM credentials and quotas survive a restart; it
// registers again the topics found on disk that the tree does not know (a
// log dir from an older build), as RestoreTopics does for brokers of one
// process.
//
// # Topic configs and identity
//
// A topic's config overrides (Kafka's topic-level names, see
// config.TopicKeys) are validated by CreateTopics and stored with the topic
// in /config/topics/<topic>, which holds configs only, so that Kafka's
// ConfigCommand can alter them too (its change reaches the brokers through
// their watch on the config node). The topic's random id is Kafka 2.8's
// topic_id in /brokers/topics/<topic> (cluster.Topic.ID); the legacy key
// tributary.topic.id is not a config, and clients can neither set nor see
// it. IncrementalAlterConfigs rewrites the config node by compare-and-set
// through the member's session. A topic written without an id (Kafka's
// TopicCommand) is not opened until the controller has given it one.
// Clients see the id as Kafka's do: in Metadata v10+ and CreateTopics v7
// responses, and Metadata v12 and DeleteTopics v6 find a topic by it
// (UNKNOWN_TOPIC_ID for an id no topic has). franz-go, like Kafka's own
// clients, fails a topic whose id changed (deleted and re-created) with
// UNKNOWN_TOPIC_ID until the client drops it.
// The reconciler applies the overrides to the partitions it opens; when they
// change, settings fixed at open (segment size, retention, flush) reopen
// the log and the others (max.message.bytes, message.timestamp.type) apply
// at once. Each partition directory records the topic id in
// partition.metadata (Kafka's format) and the overrides in
// topic.config.json. A directory whose recorded id differs from the
// topic's holds the data of an earlier topic of that name, deleted while
// this broker was away: it is deleted before the partition is served.
// The id is in the topic node itself, so it is there when a partition
// opens. RestoreTopics registers a topic found on disk with the id of its
// partition.metadata and the overrides of its topic.config.json.
//
// ListOffsets by timestamp answers the first record, in offset order, with
// a timestamp >= t in the first batch whose max timestamp is >= t: the
// storage engine finds the batch from its time index, and the broker
// decodes (and decompresses) that one batch.
//
// # Storage and recovery
//
// A topic partition is a directory <topic>-<partition> under one of log.dirs,
// owned by broker/partlog; the broker lists those directories at start and opens
// the ones it leads. Producer ids are handed out in blocks recorded in the
// file producer-ids in the first log directory before any id of the block is
// used, so ids stay unique across restarts and crashes; in a cluster the
// blocks are claimed first, by compare-and-set, at /latest_producer_id_block
// in the coordinator (Kafka's node), the file keeping a floor. Recovery after an
// unclean stop is the storage engine's business; Close flushes and closes
// every log so that it writes its clean-shutdown marker.
//
// # Resource limits
//
// RLIMIT_NOFILE is split at New into a segment-file cache
// (log.max.open.files, shared by every partition; an idle partition holds
// no descriptor), connections (max.connections) and a reserve, and logged
// at start. Connections over max.connections or max.connections.per.ip are
// closed on accept; idle ones after connections.max.idle.ms. Partition
// creation is charged to the client id under controller.mutation.rate. A
// led partition that fails to open is retried with back-off and its error
// reported to the CreateTopics, auto-creating Metadata or Produce that
// asked; repeated errors are logged once a second per kind (limits.go,
// connlimit.go, quota.go, openfail.go, ratelog.go).
//
// # Concurrency
//
// Each connection has one goroutine reading frames ahead (decoding them) and
// one handling them in order and writing responses, so responses leave in
// request order, as Kafka's one-request-at-a-time-per-connection processing
// does. Different connections run in parallel. The served partitions are
// held by broker/partition's Manager under its lock, each topic's slots
// replaced copy-on-write by the reconciler;
// each partition log is safe for concurrent Append and Read, and a log
// closed under a request answers NOT_LEADER_OR_FOLLOWER. Fetch long-polls by registering a waiter on every partition it reads;
// an append wakes the waiters of its partition. A long-poll also ends when
// its client disconnects or the broker shuts down.
//
// A Broker is safe for concurrent use. Close may be called more than once.
package broker
