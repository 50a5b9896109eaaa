// Package store keeps the audit service's state in one bbolt file: the
// summed counts per (topic, window, tier, cluster, instance), the IDs of
// every event applied (for deduplication) and, per source cluster and
// audit-topic partition, the next offset to consume.
//
// # Recovery
//
// Apply writes a batch's counts, its event IDs and the consumed offsets in
// ONE bbolt transaction, so after a crash (kill -9 included) the store
// holds either all of a batch or none of it, and consuming resumes at the
// offsets stored with the last applied batch: nothing is lost and nothing
// counted twice. An event whose ID is already stored is a duplicate and
// changes nothing, whichever cluster or offset it came from.
//
// # Layout (frozen, version 1)
//
// Bucket "meta":    "version" -> "1".
// Bucket "offsets": cluster 0x00 partition(uint32 BE) -> next offset (uint64 BE).
// Bucket "ids":     event id -> window start, Unix ms (uint64 BE).
// Bucket "expiry":  window start (uint64 BE) id -> empty (to prune IDs by age).
// Bucket "windows": topic 0x00 start(uint64 BE, Unix ms) window(uint64 BE, ms)
//
//	-> last update (uint64 BE, Unix ms of the service's clock).
//
// Bucket "counts":  the windows key 0x00 tier 0x00 cluster 0x00 instance
//
//	-> count, bytes, errors (3 x uint64 BE).
//
// Names containing 0x00 are refused by Apply (ErrBadName). Prune deletes
// windows older than a cutoff together with their counts and event IDs.
//
// # Concurrency
//
// A Store is safe for concurrent use: bbolt serializes writers and lets
// readers run beside them.
package store
