package partlog

import (
	"errors"
	"os"
)

// ApplyRetention deletes the oldest non-active segments that are past
// RetentionMs (by their largest batch timestamp, or the file's modification
// time when batches carry none) or that push the log over RetentionBytes, and
// advances the log start offset. It also forgets idempotent producers idle
// for ProducerIDExpiration or whose last batch is now below the log start
// offset. The broker calls it every log.retention.check.interval.ms. Readers
// holding Views of a deleted segment finish normally.
func (l *Log) ApplyRetention() (deletedSegments int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	segs := *l.segs.Load()
	n := 0
	if l.cfg.RetentionMs > 0 {
		nowMs := l.cfg.Now().UnixMilli()
		for n < len(segs)-1 {
			ts, err := l.segmentTime(segs[n])
			if err != nil {
				return 0, err
			}
			if nowMs-ts <= l.cfg.RetentionMs.Milliseconds() {
				break
			}
			n++
		}
	}
	if l.cfg.RetentionBytes >= 0 {
		total := l.Size()
		for _, s := range segs[:n] {
			total -= s.size.Load()
		}
		for n < len(segs)-1 && total-segs[n].size.Load() >= l.cfg.RetentionBytes {
			total -= segs[n].size.Load()
			n++
		}
	}
	if n == 0 {
		l.expireProducers(0)
		return 0, nil
	}
	kept := append([]*segment(nil), segs[n:]...)
	// Start first: a reader that sees the new start never looks for a
	// deleted segment, one that saw the old start retries.
	l.start.Store(max(kept[0].base, l.start.Load())) // DeleteRecordsBefore may be further
	l.segs.Store(&kept)
	var errs []error
	for _, s := range segs[:n] {
		errs = append(errs, s.remove())
		s.release()
	}
	// Epochs wholly below the new start go, as in Kafka's truncateFromStart.
	l.epochs.truncateFromStart(kept[0].base)
	errs = append(errs, l.files.essential(l.epochs.persist))
	l.logger.Info("retention deleted segments", "segments", n, "log_start_offset", l.start.Load())
	l.expireProducers(n)
	return n, errors.Join(errs...)
}

// expireProducers drops stale producer state; the caller holds l.mu. The
// snapshots on disk may still list the dropped producers: loading applies
// the same rules, so they do not come back.
func (l *Log) expireProducers(deletedSegments int) {
	if deletedSegments > 0 {
		l.pruneAborted()
	}
	if k := l.producers.removeStale(l.cfg.Now().UnixMilli(), l.start.Load()); k > 0 {
		l.logger.Debug("forgot producer state", "producers", k, "after_deleting_segments", deletedSegments)
	}
}

func (l *Log) segmentTime(s *segment) (int64, error) {
	ts, err := s.largestTimestamp()
	if err != nil || ts >= 0 {
		return ts, err
	}
	st, err := os.Stat(segmentPath(l.dir, s.base, logSuffix))
	if err != nil {
		return 0, err
	}
	return st.ModTime().UnixMilli(), nil
}
