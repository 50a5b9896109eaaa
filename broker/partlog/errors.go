package partlog

import "errors"

// Errors returned by a Log. Classify them with errors.Is; the returned error
// usually wraps one of these with detail for the logs.
var (
	// ErrCorruptBatch: an appended record batch is malformed (length, magic,
	// CRC, record count or last offset delta); nothing was written. Kafka: CORRUPT_MESSAGE.
	ErrCorruptBatch = errors.New("log: corrupt record batch")
	// ErrOffsetOutOfRange: the requested offset is below the log start offset.
	ErrOffsetOutOfRange = errors.New("log: offset out of range")
	// ErrClosed: the Log was closed or deleted.
	ErrClosed = errors.New("log: closed")
	// ErrOutOfOrderSequence: an idempotent batch's sequence does not follow the producer's last one.
	ErrOutOfOrderSequence = errors.New("log: out of order sequence number")
	// ErrInvalidProducerEpoch: an idempotent batch carries an epoch older than the producer's current one.
	ErrInvalidProducerEpoch = errors.New("log: invalid producer epoch")
	// ErrCorruption: data on disk failed validation; the affected bytes are never returned.
	// Kafka: KAFKA_STORAGE_ERROR.
	ErrCorruption = errors.New("log: on-disk corruption")
	// ErrInvalidConfig: a Config field is out of range (see Config.Validate).
	ErrInvalidConfig = errors.New("log: invalid config")
	// ErrOffsetMismatch: AppendReplica got batches that do not start at the
	// log end offset or leave a gap; nothing was written.
	ErrOffsetMismatch = errors.New("log: replica batch offset does not match the log end offset")
	// ErrNotBatchBoundary: TruncateTo got an offset inside a batch; nothing
	// was changed.
	ErrNotBatchBoundary = errors.New("log: offset is not a batch boundary")
	// ErrInvalidRecord: Append got a batch only the broker may write (a
	// control batch) or a transactional batch without a producer id.
	// Kafka: INVALID_RECORD.
	ErrInvalidRecord = errors.New("log: invalid record")
	// ErrInvalidTxnState: a producer with an ongoing transaction sent a
	// non-transactional batch. Kafka: INVALID_TXN_STATE.
	ErrInvalidTxnState = errors.New("log: invalid transaction state")
	// ErrTransactionCoordinatorFenced: a marker from a coordinator epoch
	// older than the producer's last marker. Kafka: TRANSACTION_COORDINATOR_FENCED.
	ErrTransactionCoordinatorFenced = errors.New("log: transaction coordinator fenced")
)

// errSegmentGone is internal: a reader raced with retention deleting its
// segment and must look the offset up again.
var errSegmentGone = errors.New("log: segment deleted")

// errIndexSuspect is internal: an index file loaded from disk led a lookup to
// a position that is not a batch boundary; the index is rebuilt and the
// lookup retried.
var errIndexSuspect = errors.New("log: index inconsistent with segment")

// ErrNoDescriptors: the process ran out of file descriptors (EMFILE/ENFILE)
// opening a segment or a new partition. What is open keeps working; retry
// once descriptors are free. Kafka: the broker answers with a retriable error.
var ErrNoDescriptors = errors.New("log: out of file descriptors")
