package broker

import (
	"errors"
	"io"
	"io/fs"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary/tributary/broker/config"
)

// PartitionLog is what the broker needs from one partition's storage. The
// production implementation is broker/partlog; tests also run an in-memory one.
type PartitionLog interface {
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

	// Replication (replica.go, replica_fetcher.go). AppendReplica appends
	// a leader's batches as they are, offsets included; the first must
	// start at EndOffset.
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

// logOpener opens (creating if needed) the log of the partition directory
// with the topic's storage settings.
type logOpener func(dir string, settings config.LogSettings) (PartitionLog, error)

// storageErrorCodes is the one table from storage errors to Kafka error
// codes; the first entry that errors.Is matches wins.
var storageErrorCodes = []struct {
	err  error
	code *kerr.Error
}{
	{logErrCorruptBatch, kerr.CorruptMessage},
	{logErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{logErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{logErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{logErrInvalidRecord, kerr.InvalidRecord},
	{logErrInvalidTxnState, kerr.InvalidTxnState},
	{logErrCoordinatorFenced, kerr.TransactionCoordinatorFenced},
	// A closed log belongs to a topic being deleted or a broker shutting
	// down: the client should refresh metadata and retry elsewhere.
	{logErrClosed, kerr.NotLeaderForPartition},
	{logErrCorruption, kerr.KafkaStorageError},
}

// storageErrorCode maps an error from a PartitionLog to a Kafka error code.
func storageErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, e := range storageErrorCodes {
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
