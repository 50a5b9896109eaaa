package broker

import (
	"log/slog"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partlog"
)

// The storage engine's sentinels, named here for the error table.
var (
	logErrCorruptBatch         = partlog.ErrCorruptBatch
	logErrOffsetOutOfRange     = partlog.ErrOffsetOutOfRange
	logErrOutOfOrderSequence   = partlog.ErrOutOfOrderSequence
	logErrInvalidProducerEpoch = partlog.ErrInvalidProducerEpoch
	logErrInvalidRecord        = partlog.ErrInvalidRecord
	logErrInvalidTxnState      = partlog.ErrInvalidTxnState
	logErrCoordinatorFenced    = partlog.ErrTransactionCoordinatorFenced
	logErrClosed               = partlog.ErrClosed
	logErrCorruption           = partlog.ErrCorruption
)

// storageLog adapts *partlog.Log to PartitionLog.
type storageLog struct{ *partlog.Log }

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

// openStorageLog opens partitions with broker/partlog; the settings are the
// topic's (broker defaults and its overrides). Every partition's segment
// files share files, the broker's descriptor budget for them.
func openStorageLog(logger *slog.Logger, files *partlog.FileCache) logOpener {
	return func(dir string, settings config.LogSettings) (PartitionLog, error) {
		lc := settings.LogConfig()
		lc.Logger = logger
		lc.Files = files
		l, err := partlog.Open(dir, lc)
		if err != nil {
			return nil, err
		}
		return storageLog{l}, nil
	}
}
