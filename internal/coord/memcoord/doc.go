// Package memcoord is an in-process coordination service with ZooKeeper's
// semantics, for a single process (`tributary dev`, a broker started without
// zookeeper.connect) and for tests. Several Sessions opened on one Server see
// one tree, exactly as several clients of one ZooKeeper ensemble would.
//
// Semantics follow ZooKeeper for everything in coord.Session: Stat versions
// (Version counts Sets, CVersion counts child creations and deletions),
// sequential names (a 10-digit suffix counting the parent's child creations,
// deletions excluded, as ZooKeeper 3.8 numbers them), ephemeral
// nodes owned by a session and deleted when it closes or expires,
// ErrNoChildrenForEphemerals, atomic Multi, and one-shot watches with
// ZooKeeper's event types: NodeCreated (ExistsW on a missing node),
// NodeDeleted, NodeDataChanged, NodeChildrenChanged. A watch event is queued
// before the write that fired it returns, so a watcher never reads the new
// state before it sees the event.
//
// Sessions never time out on their own (there is no network to lose);
// Server.Expire ends one as a ZooKeeper session expiry would: its ephemeral
// nodes are deleted (firing other sessions' watches), its own pending watches
// receive EventSessionLost and its States channel receives StateExpired.
//
// Nothing is persisted: the tree lives as long as the Server value.
//
// Concurrency: a Server and its Sessions are safe for concurrent use; one
// mutex serialises every operation, which makes the service linearizable.
package memcoord
