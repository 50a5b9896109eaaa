package mirror

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// currentGroup is s.group for goroutines other than discover's.
func (s *source) currentGroup() group {
	s.gmu.Lock()
	defer s.gmu.Unlock()
	return s.group
}

// retryStopped restarts the source's consumer when a partition has been
// stopped for at least stopped.partition.retry.ms by a refusal a new
// consumer may get past (retriable: a missing ACL): what an operator's restart of the mirror
// does, for this source only. The old consumer stops handing records over,
// the records it sent are acknowledged, its marks are committed (never past
// a refused record) and it leaves its groups; every partition of the
// source starts afresh, and a new consumer joins and resumes from the
// committed offsets, so the refused record is sent again first. If the
// cause is still there (the ACL still missing, the record still too
// large) the partition stops again and says so; records are neither lost
// nor skipped either way. Runs in the discover goroutine, which alone adds
// and removes topics.
func (s *source) retryStopped(ctx, intake context.Context) {
	retry := s.m.cfg.StoppedRetry
	if retry <= 0 {
		return
	}
	stopped := s.m.stoppedSince(s.cfg.Name, time.Now().Add(-retry))
	if len(stopped) == 0 {
		return
	}
	s.log.Warn("restarting the source's consumer to retry stopped partitions", "stopped", stopped,
		"after", retry.String())
	old := s.currentGroup()
	old.stopIntake()
	dctx, cancel := context.WithTimeout(ctx, s.m.cfg.ShutdownTimeout)
	defer cancel()
	if err := s.m.drained(dctx, s.cfg.Name, old.owned()); err != nil {
		s.log.Warn("records in flight not all acknowledged before the restart; the new consumer repeats them", "err", err)
	}
	if err := s.m.releaseMarks(dctx); err != nil {
		s.log.Warn("publishing the audit counts before the restart failed; the new consumer repeats what they cover", "err", err)
	}
	if err := old.close(dctx); err != nil {
		s.log.Warn("committing before the restart failed; the new consumer repeats what was not committed", "err", err)
	} else {
		s.committed()
	}
	s.m.forget(s.cfg.Name)
	s.mu.Lock()
	active := maps.Clone(s.active)
	s.mu.Unlock()
	for _, topic := range slices.Sorted(maps.Keys(active)) {
		s.m.learnMaxMessage(ctx, s.m.cfg.targetTopic(s.cfg.Name, topic))
	}
	var g group
	if s.cfg.zkGroups() {
		g = newZKGroup(s)
	} else {
		g = newKafkaGroup(s)
	}
	s.gmu.Lock()
	s.group = g
	s.gmu.Unlock()
	for _, topic := range slices.Sorted(maps.Keys(active)) {
		g.add(intake, topic, active[topic])
	}
}

// stoppedSince lists source's partitions stopped before t, as
// "topic/partition".
func (m *Mirror) stoppedSince(source string, t time.Time) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k, ps := range m.parts {
		if k.source == source && ps.retriable.Load() && ps.haltedSince.Load() <= t.UnixNano() {
			out = append(out, fmt.Sprintf("%s/%d", k.topic, k.partition))
		}
	}
	slices.Sort(out)
	return out
}

// forget drops the state of source's partitions so that the next records
// of each start a fresh one. Promises of records sent before still hold
// the old states and mark the old, closed consumer: they change nothing
// here.
func (m *Mirror) forget(source string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, ps := range m.parts {
		if k.source != source {
			continue
		}
		if ps.reported.Load() {
			m.metrics.stopped.Dec()
		}
		delete(m.parts, k)
	}
}
