// Package cluster is a broker's membership in a Tributary cluster: it
// registers the broker, elects one controller among the brokers, assigns
// new topics' partitions to brokers, and keeps a watch-fed cache of the
// cluster metadata (live brokers, controller, partition leaders, topic
// configs) that the broker serves Metadata from and decides which
// partitions it opens by. It speaks only to the coordination service
// (internal/coord: ZooKeeper, or memcoord in one process); it has no
// network code of its own.
//
// # Layout (frozen: Kafka's, so Kafka's own tools read and write it)
//
//	/brokers/ids/<id>        ephemeral {"version":4,"host":"h","port":9092,
//	                         "endpoints":["PLAINTEXT://h:9092"],"jmx_port":-1,
//	                         "timestamp":"<ms>"[,"rack":"r"]}
//	/controller              ephemeral {"version":1,"brokerid":1,"timestamp":"<ms>"}
//	/controller_epoch        "N", incremented by compare-and-set by each new controller
//	/brokers/topics/<t>      {"version":3,"partitions":{"0":[1],"1":[2]},"adding_replicas":{},
//	                         "removing_replicas":{},"topic_id":"<22-char base64url UUID>"}
//	                         replica lists and topic id, Kafka 2.8's shape; versions
//	                         1 and 2 and nodes without topic_id are read too
//	/brokers/topics/<t>/partitions/<p>/state
//	                         {"controller_epoch":N,"leader":1,"version":1,
//	                         "leader_epoch":E,"isr":[1,2]}, written by the controller
//	                         and, for ISR changes only, by the partition's leader
//	/config/topics/<t>       {"version":1,"config":{"retention.ms":"..."}}, configs only
//	/config/changes/config_change_<seq>
//	                         {"version":2,"entity_path":"topics/<t>"}, written by Kafka's
//	                         ConfigCommand after a config node; purged by the controller
//	                         after 15 minutes, as Kafka's brokers do
//	/config/brokers/<default>, /config/brokers/<id>
//	                         {"version":1,"config":{"log.retention.ms":"..."}}, dynamic
//	                         broker configs (Snapshot.BrokerConfigs, UpdateBrokerConfigs,
//	                         which also writes a config_change with entity_path
//	                         "brokers/<entity>")
//	/admin/delete_topics/<t> a deletion request, carried out by the controller
//	/admin/reassign_partitions
//	                         {"version":1,"partitions":[{"topic":"t","partition":0,
//	                         "replicas":[1,3]}]}, reassignments requested by Kafka's
//	                         --zookeeper tools; started, then emptied by the controller
//
// Every member watches every /config/topics/<t>, so a config written by
// another tool (Kafka's ConfigCommand --zookeeper) reaches the brokers
// without its change notification. Earlier versions kept the topic id in
// the config node under tributary.topic.id (LegacyTopicIDConfig), which
// Kafka's ConfigCommand refuses; that key is read (the cache takes the id
// from it while the topic node has none, and never shows it as a config)
// and never written.
//
// One node is ours, not Kafka's, under a prefix of its own so that it
// cannot clash with Kafka's layout or a Kafka-era tool:
//
//	/tributary/shutting_down/<id>  ephemeral, empty: broker <id> is in
//	                               controlled shutdown (Kafka asks by RPC)
//
// # Roles
//
// Join registers /brokers/ids/<id>. An id registered with other endpoints
// is another broker's and is refused at once (ErrBrokerIDRegistered). One
// registered with this broker's own host, port and endpoints is taken, as
// Kafka 0.8 did, for this broker's previous session, killed before it could
// close (a supervisor restarting a crashed broker at once): Join watches
// the node until the coordination service expires that session, up to
// Config.SessionTimeout + StaleRegistrationSlack, then registers; past the
// bound it is a live twin and refused. Every member then stands for controller
// through coord.Elect on /controller. CreateTopic and DeleteTopic may be
// called on any member: creation writes the assignment (Kafka's
// assignReplicasToBrokers, first broker first, so leaders spread evenly)
// with a new topic id (or the caller's) and the config in one multi-op;
// deletion writes a request. UpdateTopicConfigs of a topic not migrated yet
// moves the legacy id to the topic node in the same multi-op.
//
// AddPartitions grows a topic by rewriting its node (compare-and-set) with
// the new partitions' lists, computed as for a new topic of the new count
// (its tail) or given; the controller elects their leaders like a new
// topic's. ElectLeaders runs in the controller's goroutine (a request
// channel into its loop) and writes the elected states in the same fenced
// multi-ops as its own elections; other members refuse it with
// ErrNotController. AlterReassignments writes a reassignment into the topic
// node as Kafka 2.4+ does (replicas: target then the removed ones, with
// adding_replicas and removing_replicas); on every reconcile the controller
// completes those whose target replicas are all in the ISR, writing the
// state (leader kept if it stays, else the first eligible target replica;
// ISR without the removed ones; epoch bumped) and the topic node (target,
// no entries) in one fenced multi-op. A cancellation puts back the
// original replicas (replicas minus adding, Kafka's originReplicas); the
// next election drops brokers that are no longer replicas from the ISR and
// the leadership. The controller also carries out
// /admin/reassign_partitions (Kafka 2.8's tools with --zookeeper): it
// starts each entry, drops those done (or invalid) and deletes the node
// once empty.
//
// CreateTopic assigns rack-aware (Kafka's assignReplicasToBrokersRackAware,
// racks alternated in the broker list) when every live broker has a rack
// and there is more than one replica.
//
// The controller, on taking office, increments /controller_epoch and then,
// on every metadata change (brokers coming and going or shutting down,
// topics created or changed, ISR changes, deletion requests), reconciles
// each partition's state as Kafka 0.8–2.x does (see elect):
//
//   - a new partition: its live replicas form the ISR, the first leads;
//   - a dead or shutting-down leader: the first replica in assignment order
//     that is live, not shutting down and in the ISR leads, and the ISR
//     loses the dead and shutting-down brokers; none such: with unclean
//     election (the topic's unclean.leader.election.enable, else
//     Config.UncleanLeaderElection) the first live replica leads alone,
//     else the leader is -1 and the ISR is kept as it was (a shutting-down
//     leader with no successor keeps leading);
//   - a live leader: dead and shutting-down followers leave the ISR;
//   - with Config.AutoLeaderRebalance, leadership returns to the first
//     replica of the assignment once it is live and in the ISR, checked
//     on every reconcile but at most once per
//     Config.LeaderImbalanceCheckInterval (a timer wakes the controller
//     for a move that waits).
//
// Every controller write bumps leader_epoch and goes, per topic, in one
// multi-op that checks /controller_epoch's version (a replaced controller
// cannot write; it notices the fence and steps down) and each state node's
// version: a leader may have just changed the ISR, so on a conflict the
// controller reads the states again and redoes its decisions on top.
//
// The partition's leader changes only the ISR, through AlterISR: a
// compare-and-set on the state node's version, redone while the node still
// names the caller leader at the caller's leader_epoch, ErrFenced once it
// does not (deposed, or the controller rewrote the state). Every member's
// cache watches every partition state node, so an ISR change reaches all
// Snapshots as a watch event; AlterISR also waits for its own member's.
//
// ControlledShutdown creates /tributary/shutting_down/<id> and waits until
// the controller has moved away every leadership another ISR member can
// take and removed the broker from the other leaders' ISRs. Snapshot
// carries ShuttingDown and, per partition, OfflineReplicas.
//
// The controller also reads each topic node once per term (and again when
// the metadata shows a topic without an id or with another one) and
// settles its id, in one fenced multi-op checked against both nodes'
// versions: a legacy id moves from the config node to topic_id; a topic
// written without one (Kafka's TopicCommand) gets a new id, as Kafka's
// controller assigns them; one whose node was rewritten in place without
// it (an older tool) gets its id back, since a new id would make the
// brokers discard its data. Brokers do not open the partitions of a topic
// until it has an id.
//
// # Recovery
//
// When the session expires the member keeps serving its last Metadata
// (stale), opens a new session through the SessionFactory (backing off up
// to 5 s between attempts), registers again, re-arms its watches and
// stands for controller again; the controller role is given up at once.
// Until the new session is registered, Leads answers from the stale
// Metadata and CreateTopic and DeleteTopic fail with an error wrapping
// coord.ErrSessionExpired.
// A crash leaves the broker's ephemeral nodes until the coordination
// service expires its session; the other members then see its partitions
// fail over to another ISR member, or go to leader -1 when it was the last
// live one (and back to it when it registers again). A broker that comes
// back is out of the ISRs it was dropped from until their leaders add it.
//
// # Concurrency
//
// A Member is safe for concurrent use. Metadata returns an immutable
// Snapshot (callers must not modify its maps or slices); Changes returns a
// channel closed at the next change, so any number of goroutines can wait
// on it. Each session has one goroutine that owns the metadata cache and
// one that campaigns for (and serves as) controller; Close stops both and
// waits for them before closing the session.
package cluster
