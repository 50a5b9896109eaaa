package broker

import (
	"log/slog"

	"github.com/tributary/tributary/broker/config"
	plog "github.com/tributary/tributary/broker/log"
)

// The storage engine's sentinels, named here for the error table.
var (
	logErrCorruptBatch         = plog.ErrCorruptBatch
	logErrOffsetOutOfRange     = plog.ErrOffsetOutOfRange
	logErrOutOfOrderSequence   = plog.ErrOutOfOrderSequence
	logErrInvalidProducerEpoch = plog.ErrInvalidProducerEpoch
	logErrInvalidRecord        = plog.ErrInvalidRecord
	logErrInvalidTxnState      = plog.ErrInvalidTxnState
	logErrCoordinatorFenced    = plog.ErrTransactionCoordinatorFenced
	logErrClosed               = plog.ErrClosed
	logErrCorruption           = plog.ErrCorruption
)

// storageLog adapts *plog.Log to PartitionLog.
type storageLog struct{ *plog.Log }

func (l storageLog) Append(batch []byte) (AppendResult, error) {
	r, err := l.Log.Append(batch)
	return AppendResult{
		BaseOffset: r.BaseOffset, LastOffset: r.LastOffset, MaxTimestamp: r.MaxTimestamp,
		LogStartOffset: r.LogStartOffset, Duplicate: r.Duplicate,
	}, err
}

func (l storageLog) Read(offset int64, maxBytes int) (RecordView, error) {
	v, err := l.Log.Read(offset, maxBytes)
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (l storageLog) AppendReplica(batches []byte) (AppendResult, error) {
	r, err := l.Log.AppendReplica(batches)
	return AppendResult{
		BaseOffset: r.BaseOffset, LastOffset: r.LastOffset, MaxTimestamp: r.MaxTimestamp,
		LogStartOffset: r.LogStartOffset, Duplicate: r.Duplicate,
	}, err
}

func (l storageLog) ReadBelow(offset int64, maxBytes int, limit int64) (RecordView, error) {
	v, err := l.Log.ReadBelow(offset, maxBytes, limit)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// openStorageLog opens partitions with broker/log; the settings are the
// topic's (broker defaults and its overrides). Every partition's segment
// files share files, the broker's descriptor budget for them.
func openStorageLog(logger *slog.Logger, files *plog.FileCache) logOpener {
	return func(dir string, settings config.LogSettings) (PartitionLog, error) {
		lc := settings.LogConfig()
		lc.Logger = logger
		lc.Files = files
		l, err := plog.Open(dir, lc)
		if err != nil {
			return nil, err
		}
		return storageLog{l}, nil
	}
}
