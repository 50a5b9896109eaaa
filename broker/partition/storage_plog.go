package partition

import (
	"log/slog"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partlog"
)

// StorageLog adapts *partlog.Log to Log (and TxnLog, RecordDeleter); what
// OpenStorage opens.
type StorageLog struct{ *partlog.Log }

func (l StorageLog) Append(batch []byte) (AppendResult, error) {
	r, err := l.Log.Append(batch)
	return AppendResult{
		BaseOffset: r.BaseOffset, LastOffset: r.LastOffset, MaxTimestamp: r.MaxTimestamp,
		LogStartOffset: r.LogStartOffset, Duplicate: r.Duplicate,
	}, err
}

func (l StorageLog) Read(offset int64, maxBytes int) (RecordView, error) {
	v, err := l.Log.Read(offset, maxBytes)
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (l StorageLog) AppendReplica(batches []byte) (AppendResult, error) {
	r, err := l.Log.AppendReplica(batches)
	return AppendResult{
		BaseOffset: r.BaseOffset, LastOffset: r.LastOffset, MaxTimestamp: r.MaxTimestamp,
		LogStartOffset: r.LogStartOffset, Duplicate: r.Duplicate,
	}, err
}

func (l StorageLog) ReadBelow(offset int64, maxBytes int, limit int64) (RecordView, error) {
	v, err := l.Log.ReadBelow(offset, maxBytes, limit)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// OpenStorage opens partitions with broker/partlog; the settings are the
// topic's (broker defaults and its overrides). Every partition's segment
// files share files, the broker's descriptor budget for them.
func OpenStorage(logger *slog.Logger, files *partlog.FileCache) Opener {
	return func(dir string, settings config.LogSettings) (Log, error) {
		lc := settings.LogConfig()
		lc.Logger = logger
		lc.Files = files
		l, err := partlog.Open(dir, lc)
		if err != nil {
			return nil, err
		}
		return StorageLog{l}, nil
	}
}
