package service

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/audit/store"
	"github.com/tributary/tributary/internal/network"
)

// retryDelay spaces attempts to reach a cluster or store a batch.
const retryDelay = time.Second

// Bad-input reasons, the label of audit_service_bad_events_total.
const (
	reasonDecode  = "decode"  // not JSON: garbage bytes, a truncated event
	reasonVersion = "version" // an unknown format version
	reasonInvalid = "invalid" // fields out of range: negative counts, unaligned window, names
	reasonFuture  = "future"  // a window starting beyond now + MaxFuture
	reasonExpired = "expired" // a window older than the retention
)

// ingest consumes one cluster's audit topic until ctx ends, reconnecting
// after failures.
func (s *Service) ingest(ctx context.Context, c Cluster) {
	log := s.cfg.Logger.With("cluster", c.Name)
	for ctx.Err() == nil {
		err := s.consume(ctx, c, log)
		if ctx.Err() != nil {
			return
		}
		log.Warn("audit service: consuming failed; retrying", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(retryDelay):
		}
	}
}

// partitions returns the audit topic's partitions in c, asking for
// auto-creation until it exists.
func (s *Service) partitions(ctx context.Context, cl *kgo.Client, log *slog.Logger) ([]int32, error) {
	for attempt := 1; ; attempt++ {
		if err := audit.EnsureTopic(ctx, cl, s.cfg.Topic); err == nil {
			topics, err := kadm.NewClient(cl).ListTopics(ctx, s.cfg.Topic)
			if err == nil {
				if td, ok := topics[s.cfg.Topic]; ok && td.Err == nil && len(td.Partitions) > 0 {
					ps := td.Partitions.Numbers()
					sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
					return ps, nil
				}
			}
		}
		if attempt%30 == 5 { // after ~5 s, then every ~30 s
			log.Warn("audit service: waiting for the audit topic (is auto.create.topics.enable off? create it)", "topic", s.cfg.Topic)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(retryDelay):
		}
	}
}

func (s *Service) consume(ctx context.Context, c Cluster, log *slog.Logger) error {
	conn := network.ClientConfig{Brokers: c.Brokers}.Secured(c.Security)
	admin, err := network.NewClient(conn)
	if err != nil {
		return err
	}
	defer admin.Close()
	parts, err := s.partitions(ctx, admin, log)
	if err != nil {
		return err
	}
	stored, err := s.store.Positions(c.Name)
	if err != nil {
		return err
	}
	start := map[int32]kgo.Offset{}
	for _, p := range parts {
		start[p] = startOffset(stored, p)
	}
	cl, err := network.NewClient(conn,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.cfg.Topic: start}),
		// An exactly-once mirror writes its counts in its transactions:
		// those of an aborted one must not count.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	log.Info("audit service: consuming", "topic", s.cfg.Topic, "partitions", len(parts), "stored_positions", len(stored))

	known := map[int32]bool{}
	for _, p := range parts {
		known[p] = true
	}
	lag := map[int32]int64{}
	nextRefresh := time.Now().Add(s.cfg.PartitionRefresh)
	for {
		pollCtx, cancel := context.WithTimeout(ctx, s.cfg.PartitionRefresh)
		fetches := cl.PollFetches(pollCtx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				log.Warn("audit service: fetch error", "partition", fe.Partition, "err", fe.Err)
			}
		}
		if err := s.applyFetches(ctx, c.Name, fetches, lag, log); err != nil {
			return err
		}
		if time.Now().After(nextRefresh) {
			nextRefresh = time.Now().Add(s.cfg.PartitionRefresh)
			s.addNewPartitions(ctx, admin, cl, known, log)
		}
	}
}

func startOffset(stored map[int32]int64, p int32) kgo.Offset {
	if next, ok := stored[p]; ok {
		return kgo.NewOffset().At(next)
	}
	return kgo.NewOffset().AtStart()
}

func (s *Service) addNewPartitions(ctx context.Context, admin, cl *kgo.Client, known map[int32]bool, log *slog.Logger) {
	topics, err := kadm.NewClient(admin).ListTopics(ctx, s.cfg.Topic)
	if err != nil {
		return
	}
	td, ok := topics[s.cfg.Topic]
	if !ok || td.Err != nil {
		return
	}
	add := map[int32]kgo.Offset{}
	for _, p := range td.Partitions.Numbers() {
		if !known[p] {
			known[p] = true
			add[p] = kgo.NewOffset().AtStart()
		}
	}
	if len(add) > 0 {
		log.Info("audit service: new audit-topic partitions", "partitions", len(add))
		cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{s.cfg.Topic: add})
	}
}

// applyFetches decodes one poll's records and applies the good events
// together with the offsets after every record read, in one transaction.
func (s *Service) applyFetches(ctx context.Context, cluster string, fetches kgo.Fetches, lag map[int32]int64, log *slog.Logger) error {
	var events []audit.Event
	next := map[int32]int64{}
	now := s.cfg.Now()
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		for _, r := range fp.Records {
			next[r.Partition] = r.Offset + 1
			e, reason, err := s.decode(r.Value, now)
			if err != nil {
				s.metrics.bad.WithLabelValues(cluster, reason).Inc()
				log.Warn("audit service: skipping bad audit event", "partition", r.Partition, "offset", r.Offset,
					"reason", reason, "err", err)
				continue
			}
			events = append(events, e)
		}
		if n, ok := next[fp.Partition]; ok && fp.HighWatermark >= n {
			lag[fp.Partition] = fp.HighWatermark - n
		}
	})
	var total int64
	for _, l := range lag {
		total += l
	}
	s.metrics.lag.WithLabelValues(cluster).Set(float64(total))
	if len(next) == 0 {
		return nil
	}
	positions := make([]store.Position, 0, len(next))
	for p, n := range next {
		positions = append(positions, store.Position{Cluster: cluster, Partition: p, Next: n})
	}
	for {
		res, err := s.store.Apply(events, positions, now)
		if err == nil {
			s.metrics.consumed.WithLabelValues(cluster).Add(float64(res.Applied))
			s.metrics.duplicates.WithLabelValues(cluster).Add(float64(res.Duplicates))
			return nil
		}
		// A store that cannot write must not let consuming run ahead of
		// it: keep retrying this batch.
		log.Error("audit service: store apply failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryDelay):
		}
	}
}

// decode parses and checks one audit record.
func (s *Service) decode(b []byte, now time.Time) (audit.Event, string, error) {
	e, err := audit.UnmarshalEvent(b)
	switch {
	case errors.Is(err, audit.ErrUnknownVersion):
		return e, reasonVersion, err
	case err != nil && errors.Is(err, audit.ErrBadEvent) && isDecodeError(b):
		return e, reasonDecode, err
	case err != nil:
		return e, reasonInvalid, err
	}
	if err := store.CheckNames(e); err != nil {
		return e, reasonInvalid, err
	}
	if e.WindowStart.Before(time.UnixMilli(0)) {
		return e, reasonInvalid, errors.New("window starts before 1970")
	}
	if e.WindowStart.Before(now.Add(-s.cfg.Retention)) {
		return e, reasonExpired, errors.New("window is older than the retention: " + e.WindowStart.Format(time.RFC3339))
	}
	if e.WindowStart.After(now.Add(s.cfg.MaxFuture)) {
		return e, reasonFuture, errors.New("window starts more than max-future after now: " + e.WindowStart.Format(time.RFC3339))
	}
	return e, "", nil
}

// isDecodeError tells bytes that are not JSON at all (garbage, a truncated
// event) from JSON with bad fields.
func isDecodeError(b []byte) bool { return !json.Valid(b) }
