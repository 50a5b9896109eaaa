// Package cluster is a broker's membership in a Tributary cluster: it
// registers the broker, elects one controller among the brokers, assigns
// new topics' partitions to brokers, and keeps a watch-fed cache of the
// cluster metadata (live brokers, controller, partition leaders, topic
// configs) that the broker serves Metadata from and decides which
// partitions it opens by. It speaks only to the coordination service
// (internal/coord: ZooKeeper, or memcoord in one process); it has no
// network code of its own.
//
// # Layout (frozen: Kafka 0.8's, so Kafka-era tools read it)
//
//	/brokers/ids/<id>        ephemeral {"version":4,"host":"h","port":9092,
//	                         "endpoints":["PLAINTEXT://h:9092"],"jmx_port":-1,
//	                         "timestamp":"<ms>"[,"rack":"r"]}
//	/controller              ephemeral {"version":1,"brokerid":1,"timestamp":"<ms>"}
//	/controller_epoch        "N", incremented by compare-and-set by each new controller
//	/brokers/topics/<t>      {"version":1,"partitions":{"0":[1],"1":[2]}} replica lists
//	/brokers/topics/<t>/partitions/<p>/state
//	                         {"controller_epoch":N,"leader":1,"version":1,
//	                         "leader_epoch":E,"isr":[1]}, written by the controller only
//	/config/topics/<t>       {"version":1,"config":{"retention.ms":"..."}}
//	/admin/delete_topics/<t> a deletion request, carried out by the controller
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
// and the config in one multi-op; deletion writes a request.
//
// The controller, on taking office, increments /controller_epoch and then,
// on every metadata change (brokers coming and going, topics created or
// changed, deletion requests), reconciles: a partition's leader is the
// first live replica of its assignment (-1 when none is live), its ISR the
// leader alone (there is no replication yet; with no live replica the last
// ISR is kept, as Kafka does). Changed states are written with
// leader_epoch+1 in one multi-op per topic that also checks
// /controller_epoch's version: a controller that was replaced cannot
// write, notices the fence and steps down.
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
// go to leader -1, and back to it when it registers again.
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
