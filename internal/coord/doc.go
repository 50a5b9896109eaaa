// Package coord is the coordination service Tributary's brokers, consumer
// groups, schema registry and jobs agree through: a tree of nodes with
// ZooKeeper's semantics (sessions, ephemeral and sequential nodes, one-shot
// watches, versioned compare-and-set, atomic multi-ops).
//
// Two implementations share this interface and one conformance suite
// (coordtest): zkcoord, a real ZooKeeper ensemble, which is the product; and
// memcoord, an in-process tree for a single process (`tributary dev`), whose
// sessions, ephemeral nodes and watches behave the same way.
//
// The ZooKeeper layout (Kafka 0.8) under the optional chroot:
//
//	/brokers/ids/<id>                        ephemeral, broker registration JSON
//	/brokers/topics/<topic>                  partition assignment JSON
//	/controller                              ephemeral, the elected controller
//	/controller_epoch                        controller epoch counter
//	/config/topics/<topic>                   per-topic config overrides
//	/consumers/<group>/ids/<consumer>        ephemeral, subscription
//	/consumers/<group>/owners/<topic>/<p>    ephemeral, owning consumer id
//	/consumers/<group>/offsets/<topic>/<p>   persistent, next offset to consume
//
// Errors are the sentinels of errors.go; implementations wrap them with %w.
//
// Redialer holds the session of a component's occasional operations and
// opens a new one when it has ended (the ACL and SCRAM credential stores'
// writes use it); it is safe for concurrent use. FollowSessions keeps a
// cache following the tree across sessions: a new session after each loss,
// spaced by FollowBackoff (the ACL, SCRAM credential and quota caches,
// which run it in the background from their start to their Close through a
// Follower).
//
// Register creates the ephemeral node that names a process (a broker's id,
// a consumer's id), waiting up to a bound for an earlier session of the
// same process to let go of it and refusing another process's at once.
package coord
