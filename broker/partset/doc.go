// Package partset is the set of partitions of an internal topic that a
// coordinator serves: the group coordinator's partitions of
// __consumer_offsets and the transaction coordinator's of
// __transaction_state. The broker hands a coordinator each partition it
// leads (Load) and takes it back when leadership moves (Unload); the set
// keeps which partitions are served, reads each back in the background,
// wakes the callers waiting for a partition to be loaded, and makes sure a
// load that was overtaken by an Unload or a newer Load cannot install what
// it read.
//
// A Set knows nothing of what a partition holds: the coordinator's
// per-partition contents (groups and pending transactional offsets,
// transactional ids) are a value of type C that the set keeps beside each
// partition and hands to three hooks: New builds the contents of a
// partition about to load, Load reads the partition's log back into them,
// Unload drops them once the partition has left the set. The contents are
// guarded by the coordinator's own locks, never by the set's.
//
// # Lifecycle
//
// Each Load of a partition makes a new Partition (the load's generation):
// loading, then loaded, until it leaves the set by Unload, Close, a later
// Load of the same index with another log or epoch, or a failed load.
// Loading the same log at the same epoch again is a no-op. A Partition
// that left the set never comes back: Served reports false for it and
// MarkLoaded refuses it, so a stale load installs nothing that is served.
// Its Context ends when it leaves the set.
//
// The Load hook runs in a goroutine of its own. It may mark the partition
// loaded itself with MarkLoaded, under a lock of its own, to make its
// install and the mark one step for the coordinator's readers (the group
// coordinator does); if it returns nil without, the set marks it. If it
// returns an error, the partition is unloaded (if it is still the one
// served at its index), and the coordinator serves it no more until the
// next Load: the transaction coordinator does that on a failed replay,
// while the group coordinator logs the failure and serves the partition
// with what it read, so its Load hook never fails.
//
// AwaitLoaded waits until a partition is served and loaded. An Unload
// wakes the waiters but does not end their wait (the broker may load the
// partition again); only their context does, with its error.
//
// # Concurrency
//
// A Set is safe for concurrent use. Its lock is the innermost: a
// coordinator may call any method of the set or of a Partition while
// holding its own locks (coordinator lock first, then the set's), and the
// set never calls out while holding its lock: the hooks run without it.
// Because the Unload hook runs from Set.Load, Set.Unload and Set.Close,
// a coordinator must not call those three holding a lock its Unload hook
// takes. The New hook runs before the partition is visible, with no lock.
package partset
