// Package txn is the broker's transaction coordinator (KIP-98, with the
// fencing of KIP-360 and Kafka >= 2.5 semantics): InitProducerId with a
// transactional.id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
// DescribeTransactions and ListTransactions, so that transactional
// producers of every standard client (Java, franz-go, librdkafka) work
// against Tributary brokers.
//
// # Placement and format
//
// A transactional id belongs to partition PartitionFor(id, n) of the
// internal topic __transaction_state (n is
// transaction.state.log.num.partitions, 50 by default): Java's
// String.hashCode with the sign bit masked, modulo n, as Kafka places it.
// The broker leading that partition is the id's coordinator; the broker
// hands the partitions it leads to Load (with the partition's leader
// epoch, the coordinator epoch of the markers) and takes them back with
// Unload, exactly as it does for the group coordinator over
// __consumer_offsets: both run over the same Log seam (group.Log), a
// compacted internal topic replicated like any other whose appends wait
// for the in-sync replicas.
//
// Every state change is one record in Kafka's own format (frozen), so that
// Kafka's DumpLogSegments --transaction-log-decoder reads the topic: key
// TransactionLogKey v0 (the transactional id), value TransactionLogValue
// v0 (producer id, producer epoch, transaction timeout, state, the
// partitions of the transaction, last update and start timestamps); a
// null value removes the id. The log is the truth: a change is applied in
// memory only after its record is appended.
//
// # States
//
// Kafka's: Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit,
// CompleteAbort, Dead (removed) and PrepareEpochFence (never written; a
// fence is written as PrepareAbort at the bumped epoch). InitProducerId
// bumps the epoch of an id without an open transaction (a new producer id
// at epoch 0 when the epoch is exhausted), answers a retry of itself
// (KIP-360: the producer id and epoch it was given before) with the
// current epoch, fences an ongoing transaction by aborting it at a bumped
// epoch (the caller gets CONCURRENT_TRANSACTIONS and retries), and refuses
// a producer id or epoch it did not hand out with PRODUCER_FENCED. The
// first AddPartitionsToTxn (or AddOffsetsToTxn, which adds the group's
// partition of __consumer_offsets) starts a transaction; EndTxn writes
// PrepareCommit or PrepareAbort before answering, then the coordinator
// writes the markers (WriteTxnMarkers to the partitions' leaders, retried
// until they have them) and CompleteCommit or CompleteAbort. Meanwhile
// the id's requests get CONCURRENT_TRANSACTIONS. Requests with another
// producer id get INVALID_PRODUCER_ID_MAPPING, with an older epoch
// PRODUCER_FENCED (the broker answers INVALID_PRODUCER_EPOCH to the
// versions before KIP-588), EndTxn without a transaction
// INVALID_TXN_STATE, a transaction.timeout.ms above
// transaction.max.timeout.ms INVALID_TRANSACTION_TIMEOUT.
// VerifyPartitions answers the partition leaders' verify-only
// AddPartitionsToTxn v4 (KIP-890 part 1) and changes nothing: whether each
// partition is in the ongoing transaction, CONCURRENT_TRANSACTIONS while
// it is being prepared.
//
// # Timeouts, expiry, failover
//
// AbortTimedOut (every
// transaction.abort.timed.out.transaction.cleanup.interval.ms) aborts
// ongoing transactions older than their timeout, bumping the epoch so
// that the producer that left them is fenced. RemoveExpired (every
// transaction.remove.expired.transaction.cleanup.interval.ms) removes ids
// without a transaction for transactional.id.expiration.ms. A coordinator
// that loads a partition (after a failover) completes every transaction it
// finds prepared; ongoing ones are aborted when their timeout passes.
//
// # Concurrency
//
// A Coordinator is safe for concurrent use. Which state partitions are
// served, loading or loaded, and at which epoch, is a partset.Set (shared
// with the group coordinator); a state partition's mu guards its
// transactional ids. Lock order: a state partition's mu before the set's
// lock (the innermost); marker writes run without locks. A failed replay
// unloads the partition (the set does, on the load hook's error).
package txn
