package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/network"
)

// group is how a source's partitions are shared among mirror processes:
// the ZooKeeper consumer groups (zkGroup) or the Kafka group protocol
// (kafkaGroup). Records flow from the group to Mirror.produce.
type group interface {
	// add starts consuming topic (partitions at discovery) from intake on.
	add(intake context.Context, topic string, partitions int)
	// remove stops consuming a topic that no longer exists.
	remove(ctx context.Context, topic string)
	// owned lists the partitions this process owns now.
	owned() map[string][]int32
	// stopIntake stops handing records to the producer and waits for that.
	stopIntake()
	// close commits what the target acknowledged and leaves the group.
	close(ctx context.Context) error
}

// source is one source cluster.
type source struct {
	m   *Mirror
	cfg SourceConfig
	log *slog.Logger

	meta *kgo.Client // metadata, configs and end offsets
	adm  *kadm.Client

	// group is replaced only by restart, in the discover goroutine, which
	// is the only one that adds and removes topics; others read it under gmu.
	gmu   sync.Mutex
	group group

	lastCommit atomic.Int64 // unix nanos; start time until the first commit

	mu     sync.Mutex
	active map[string]int // topics being mirrored -> partitions at discovery

	// unmatchedWarned: the last refresh warned that topics matches none of
	// the source's topics (discover goroutine only).
	unmatchedWarned bool
}

func (s *source) open() error {
	// The topic refresh lists the topics through this client, whose cached
	// metadata would otherwise hide a topic's growth for up to 5 s.
	cl, err := network.NewClient(network.ClientConfig{Brokers: s.cfg.Brokers, ClientID: s.m.cfg.ClientID, Logger: s.log}.Secured(s.cfg.Security),
		kgo.MetadataMinAge(min(s.m.cfg.TopicRefreshInterval, 5*time.Second)))
	if err != nil {
		return fmt.Errorf("mirror: source %s: %w", s.cfg.Name, err)
	}
	s.meta, s.adm = cl, kadm.NewClient(cl)
	s.lastCommit.Store(time.Now().UnixNano())
	switch {
	case s.m.cfg.ExactlyOnce:
		s.group = newEOSGroup(s)
	case s.cfg.zkGroups():
		s.group = newZKGroup(s)
	default:
		s.group = newKafkaGroup(s)
	}
	return nil
}

func (s *source) committed() { s.lastCommit.Store(time.Now().UnixNano()) }

// discover lists the source's topics at once and every
// topic.refresh.interval.ms, starting the new matching ones (after their
// target topic exists) and stopping deleted ones.
func (s *source) discover(ctx, intake context.Context) {
	t := time.NewTicker(s.m.cfg.TopicRefreshInterval)
	defer t.Stop()
	for {
		if err := s.refresh(ctx, intake); err != nil && ctx.Err() == nil {
			s.log.Warn("listing source topics failed; retrying", "err", err, "in", s.m.cfg.TopicRefreshInterval)
		}
		if ctx.Err() == nil && intake.Err() == nil {
			s.retryStopped(ctx, intake)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *source) refresh(ctx, intake context.Context) error {
	details, err := s.adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	active := maps.Clone(s.active)
	s.mu.Unlock()
	var errs []error
	s.warnUnmatched(details)
	for _, name := range slices.Sorted(maps.Keys(details)) {
		d := details[name]
		if d.Err != nil || !s.m.mirrored(name) {
			continue
		}
		n := len(d.Partitions)
		if old, ok := active[name]; ok {
			if n > old {
				// New partitions need their target partitions first.
				if err := s.m.ensureTarget(ctx, s, name, n); err != nil {
					errs = append(errs, err)
				} else if g, ok := s.group.(interface {
					grow(context.Context, string, int)
				}); ok {
					g.grow(ctx, name, n) // the Kafka groups see growth themselves
				}
			}
			continue
		}
		if n == 0 {
			continue
		}
		if err := s.m.ensureTarget(ctx, s, name, n); err != nil {
			errs = append(errs, err)
			continue // retried at the next refresh
		}
		s.log.Info("topic found; mirroring", "topic", name, "partitions", n, "target_topic", s.m.cfg.targetTopic(s.cfg.Name, name))
		s.mu.Lock()
		s.active[name] = n
		s.m.metrics.topics.WithLabelValues(s.cfg.Name).Set(float64(len(s.active)))
		s.mu.Unlock()
		s.group.add(intake, name, n)
	}
	for name := range active {
		if d, ok := details[name]; !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			s.log.Info("topic deleted at the source; its partitions stop", "topic", name)
			s.group.remove(ctx, name)
			s.mu.Lock()
			delete(s.active, name)
			s.m.metrics.topics.WithLabelValues(s.cfg.Name).Set(float64(len(s.active)))
			s.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// warnUnmatched warns, once until it changes, when the topics regex
// matches none of the source's topics (the audit topic aside): a typo in
// topics would otherwise mirror nothing with no word said. Topics created
// later are still picked up, so it is a warning, not an error.
func (s *source) warnUnmatched(details kadm.TopicDetails) {
	var others []string
	matched := false
	for _, name := range slices.Sorted(maps.Keys(details)) {
		if name == AuditTopic || strings.HasPrefix(name, "__") {
			continue
		}
		if s.m.mirrored(name) {
			matched = true
			break
		}
		others = append(others, name)
	}
	if matched {
		s.unmatchedWarned = false
		return
	}
	if s.unmatchedWarned {
		return
	}
	s.unmatchedWarned = true
	if len(others) > 10 {
		others = append(others[:10], "...")
	}
	s.log.Warn("topics matches no topic of this source (yet); nothing but the audit topic is mirrored until one appears",
		"topics", s.m.cfg.Topics, "topics.exclude", s.m.cfg.TopicsExclude, "source_topics", strings.Join(others, ","))
}

// ensureTarget makes sure the target topic of source topic exists with at
// least partitions partitions, creating it with the source topic's
// explicitly set configs when missing and growing it (CreatePartitions)
// when it has fewer.
func (m *Mirror) ensureTarget(ctx context.Context, s *source, topic string, partitions int) error {
	name := m.cfg.targetTopic(s.cfg.Name, topic)
	m.mu.Lock()
	have := m.made[name]
	m.mu.Unlock()
	if have >= partitions {
		return nil
	}
	defer m.learnMaxMessage(ctx, name)
	have, exists, err := m.targetPartitions(ctx, name)
	if err != nil {
		return fmt.Errorf("target metadata for %s: %w", name, err)
	}
	if !exists {
		created, err := m.createTarget(ctx, s, topic, name, partitions)
		if err != nil {
			return err
		}
		if created {
			m.mu.Lock()
			m.made[name] = partitions
			m.mu.Unlock()
			return nil
		}
		// Another mirror process (or source) was first, perhaps with
		// fewer partitions: look again.
		if have, exists, err = m.targetPartitions(ctx, name); err != nil {
			return fmt.Errorf("target metadata for %s: %w", name, err)
		}
		if !exists {
			return fmt.Errorf("creating target topic %s: %w, yet the target does not know it", name, kerr.TopicAlreadyExists)
		}
	}
	if have < partitions {
		s.log.Warn("target topic has fewer partitions than the source; adding", "target_topic", name, "target_partitions", have, "partitions", partitions)
		resp, err := m.tadm.UpdatePartitions(ctx, partitions, name)
		if err == nil {
			err = resp[name].Err
			if errors.Is(err, kerr.InvalidPartitions) {
				err = nil // another mirror process (or source) grew it first
			}
		}
		if err != nil {
			// The source partitions beyond have then stop at their
			// first record, with an error naming them.
			s.log.Error("adding target partitions failed", "target_topic", name, "err", err)
		} else {
			have = partitions
		}
	}
	m.mu.Lock()
	m.made[name] = have
	m.mu.Unlock()
	return nil
}

// targetPartitions asks the target for topic name's partition count
// (exists false: the target does not know it). The request goes to a
// broker, not to the client's metadata cache (kadm's ListTopics), which
// for up to metadata.min.age (5 s) after the look that found no topic
// still says UNKNOWN_TOPIC_OR_PARTITION: a growth just after the creation
// then took the topic for missing, got TOPIC_ALREADY_EXISTS and counted
// the partitions it never added, so its new partitions' records waited
// for target partitions that were never there.
func (m *Mirror) targetPartitions(ctx context.Context, name string) (n int, exists bool, err error) {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(name)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, m.target)
	if err != nil {
		return 0, false, err
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != name {
			continue
		}
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case err == nil:
			return len(t.Partitions), true, nil
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			return 0, false, nil
		default:
			return 0, false, err
		}
	}
	return 0, false, nil
}

// createTarget creates target topic name for source topic topic with
// partitions partitions and the source topic's explicitly set configs
// (without them if the target refuses them); created is false when the
// topic already exists.
func (m *Mirror) createTarget(ctx context.Context, s *source, topic, name string, partitions int) (created bool, err error) {
	configs := map[string]*string{}
	if rcs, err := s.adm.DescribeTopicConfigs(ctx, topic); err == nil {
		for _, rc := range rcs {
			for _, c := range rc.Configs {
				if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
					configs[c.Key] = c.Value
				}
			}
		}
	} else {
		s.log.Warn("reading source topic configs failed; creating the target topic without them", "topic", topic, "err", err)
	}
	rf := m.cfg.TargetReplicationFactor
	if rf == 0 {
		rf = -1
	}
	resp, err := m.tadm.CreateTopic(ctx, int32(partitions), rf, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) && len(configs) > 0 {
		s.log.Warn("creating the target topic with the source's configs failed; creating it without them", "target_topic", name, "configs", configs, "err", err)
		resp, err = m.tadm.CreateTopic(ctx, int32(partitions), rf, nil, name)
		if err == nil {
			err = resp.Err
		}
	}
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("creating target topic %s: %w", name, err)
	}
	s.log.Info("created target topic", "target_topic", name, "partitions", partitions, "configs", len(configs))
	return true, nil
}

// updateLag sets the lag of owned partitions and the time since the last
// commit.
func (s *source) updateLag(ctx context.Context) {
	s.m.metrics.sinceCommit.WithLabelValues(s.cfg.Name).Set(time.Since(time.Unix(0, s.lastCommit.Load())).Seconds())
	owned := s.currentGroup().owned()
	s.m.metrics.lag.DeletePartialMatch(map[string]string{"source": s.cfg.Name})
	if len(owned) == 0 {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ends, err := s.adm.ListEndOffsets(lctx, slices.Collect(maps.Keys(owned))...)
	if err != nil {
		return
	}
	for topic, ps := range owned {
		for _, p := range ps {
			end, ok := ends.Lookup(topic, p)
			if !ok || end.Err != nil {
				continue
			}
			s.m.mu.Lock()
			st := s.m.parts[partKey{s.cfg.Name, topic, p}]
			s.m.mu.Unlock()
			if st == nil || st.acked.Load() < 0 {
				continue // nothing acknowledged here yet: position unknown
			}
			s.m.metrics.lag.WithLabelValues(s.cfg.Name, topic, strconv.Itoa(int(p))).Set(float64(max(0, end.Offset-st.acked.Load())))
		}
	}
}

func (s *source) stopIntake() { s.currentGroup().stopIntake() }

func (s *source) close(ctx context.Context) error {
	err := s.currentGroup().close(ctx)
	s.meta.Close()
	if err != nil {
		return fmt.Errorf("mirror: source %s: %w", s.cfg.Name, err)
	}
	return nil
}

// learnMaxMessage reads the target topic's max.message.bytes (the
// default when it cannot).
func (m *Mirror) learnMaxMessage(ctx context.Context, topic string) {
	rcs, err := m.tadm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return
	}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Key != "max.message.bytes" || c.Value == nil {
				continue
			}
			if n, err := strconv.ParseInt(*c.Value, 10, 32); err == nil && n > 0 {
				m.maxMessage.Store(topic, int32(n))
			}
		}
	}
}
