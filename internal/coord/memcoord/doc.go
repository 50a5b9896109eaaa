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
// Durability: a Server from NewServer keeps nothing; one from Open keeps its
// persistent nodes in a directory as ZooKeeper keeps its tree in its
// dataDir, so that a process restarted on the same directory finds the
// tree it left (`tributary dev --dir`): every write is appended to the
// transaction log (TxnLogFile: records of a big-endian length, a CRC-32C
// and a JSON body naming the new state of every persistent node the write
// touched and the paths it deleted, with a sequence number) and fsynced
// before it returns, or undone if it cannot be; the log is folded into
// SnapshotFile (the whole persistent tree as of a sequence number, JSON,
// replaced atomically) as it grows and at Close. Open loads the snapshot,
// replays the newer records and drops a torn last one (its write never
// returned). Sessions do not survive the process, so neither do ephemeral
// nodes: a restart is every session expiring at once. The versions,
// creation counters (sequential names go on) and data of persistent nodes
// are kept. One Server has a directory at a time (a file lock).
//
// Concurrency: a Server and its Sessions are safe for concurrent use; one
// mutex serialises every operation, which makes the service linearizable.
package memcoord
