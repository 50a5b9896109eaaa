package partition

import (
	"errors"
	"io"
	"io/fs"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partlog"
)

// Log is what a Replica needs from one partition's storage. The
// production implementation is broker/partlog (OpenStorage); the broker's
// tests also run an in-memory one.
type Log interface {
	// Append validates and appends one or more magic-2 record batches,
	// assigning offsets by patching the batch in place.
	Append(batch []byte) (AppendResult, error)
	// Read returns whole batches starting at the batch holding offset, at
	// least one, at most about maxBytes beyond the first.
	Read(offset int64, maxBytes int) (RecordView, error)
	StartOffset() int64
	EndOffset() int64
	Size() int64
	Flush() error
	ApplyRetention() (int, error)
	OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool)

	// Replication (replication.go, the broker's replica fetcher).
	// AppendReplica appends a leader's batches as they are, offsets
	// included; the first must start at EndOffset.
	AppendReplica(batches []byte) (AppendResult, error)
	// ReadBelow is Read limited to whole batches ending before limit (the
	// high watermark); empty when the batch at offset does not.
	ReadBelow(offset int64, maxBytes int, limit int64) (RecordView, error)
	// TruncateTo drops every record at or after offset, a batch boundary.
	TruncateTo(offset int64) error
	// TruncateFullyAndStartAt empties the log and restarts it at offset
	// (a follower behind its leader's log start).
	TruncateFullyAndStartAt(offset int64) error
	// LatestEpoch is the newest leader epoch in the log, -1 if none;
	// EndOffsetForEpoch is Kafka's OffsetsForLeaderEpoch answer.
	LatestEpoch() int32
	EndOffsetForEpoch(epoch int32) (int32, int64)

	Close() error
	Delete() error
}

// AppendResult describes an append, as Produce reports it.
type AppendResult struct {
	BaseOffset, LastOffset, MaxTimestamp, LogStartOffset int64
	// Duplicate is set when an idempotent producer resent a batch that is
	// already in the log; the offsets are the original ones.
	Duplicate bool
}

// RecordView is a read-only window on log bytes that may be sent with
// sendfile. It must be released.
type RecordView interface {
	Len() int64
	Bytes() ([]byte, error)
	WriteTo(w io.Writer) (int64, error)
	Release()
}

// Opener opens (creating if needed) the log of the partition directory
// with the topic's storage settings.
type Opener func(dir string, settings config.LogSettings) (Log, error)

// TxnLog is what transactions need from a partition's storage, beyond
// Log: broker/partlog has it, the broker tests' in-memory log does not
// (its partitions answer as if no transaction ever ran, and refuse
// markers).
type TxnLog interface {
	// AppendMarker writes a COMMIT or ABORT marker for the producer (see
	// partlog.Log.AppendMarker).
	AppendMarker(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, leaderEpoch int32) (partlog.AppendResult, error)
	// LastStableOffset is min(first offset of the oldest ongoing
	// transaction, hw).
	LastStableOffset(hw int64) int64
	// AbortedTransactions overlapping [from, upper), for read_committed.
	AbortedTransactions(from, upper int64) []partlog.AbortedTxn
	// Producers lists the partition's active producers (DescribeProducers).
	Producers() []partlog.ProducerInfo
}

// RecordDeleter is the storage side of DeleteRecords: a Log whose log
// start offset can be moved into a segment (broker/partlog's
// DeleteRecordsBefore). A log without it refuses DeleteRecords.
type RecordDeleter interface {
	DeleteRecordsBefore(offset int64) (int64, error)
}

// errorCodes is the one table from storage errors to Kafka error codes;
// the first entry that errors.Is matches wins.
var errorCodes = []struct {
	err  error
	code *kerr.Error
}{
	{partlog.ErrCorruptBatch, kerr.CorruptMessage},
	{partlog.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{partlog.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{partlog.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{partlog.ErrInvalidRecord, kerr.InvalidRecord},
	{partlog.ErrInvalidTxnState, kerr.InvalidTxnState},
	{partlog.ErrTransactionCoordinatorFenced, kerr.TransactionCoordinatorFenced},
	// A closed log belongs to a topic being deleted or a broker shutting
	// down: the client should refresh metadata and retry elsewhere.
	{partlog.ErrClosed, kerr.NotLeaderForPartition},
	{partlog.ErrCorruption, kerr.KafkaStorageError},
}

// ErrorCode maps an error from a Log to a Kafka error code.
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return e.code.Code
		}
	}
	var errno syscall.Errno
	var pathErr *fs.PathError
	if errors.As(err, &errno) || errors.As(err, &pathErr) {
		return kerr.KafkaStorageError.Code
	}
	return kerr.UnknownServerError.Code
}
