package mirror

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/mirror/checkpoint"
	"github.com/tributary/tributary/mirror/offsetsync"
)

// Translation is one partition of a source group's committed offsets and
// where they point on the target.
type Translation struct {
	Group     string
	Topic     string // the source topic
	Partition int32
	// SourceOffset is the group's committed offset on the source.
	SourceOffset int64
	Metadata     string
	// TargetTopic and TargetOffset are the translation: the first target
	// record whose source offset is at or past SourceOffset. OK is false
	// when the mirror has not yet mirrored up to SourceOffset (then
	// TargetOffset is -1).
	TargetTopic  string
	TargetOffset int64
	OK           bool
	// TargetEnd is the target partition's end offset (Translate only; -1
	// unknown): TargetEnd - TargetOffset records are left to read there.
	TargetEnd int64
}

// translate translates the committed offsets of group on source (those
// of the topics the mirror mirrors, or of topic alone when set).
func (m *Mirror) translate(store *offsetsync.Store, source, group, topic string, offsets kadm.OffsetResponses) []Translation {
	var out []Translation
	offsets.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil || o.At < 0 || (topic != "" && o.Topic != topic) || o.Topic == AuditTopic || !m.mirrored(o.Topic) {
			return
		}
		tr := Translation{Group: group, Topic: o.Topic, Partition: o.Partition, SourceOffset: o.At, Metadata: o.Metadata,
			TargetTopic: m.cfg.targetTopic(source, o.Topic), TargetOffset: -1}
		if tt, off, ok := store.Translate(source, o.Topic, o.Partition, o.At); ok {
			tr.TargetTopic, tr.TargetOffset, tr.OK = tt, off, true
		}
		out = append(out, tr)
	})
	slices.SortFunc(out, func(a, b Translation) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// checkpointer emits the checkpoints of every source every
// emit.checkpoints.interval.seconds (see the package doc).
type checkpointer struct {
	m       *Mirror
	tail    *syncTail
	groups  *regexp.Regexp
	exclude *regexp.Regexp
	// written holds the last checkpoint written per source, group, topic
	// and partition; upToDate when each group's checkpoints last covered
	// all its partitions.
	written  map[string]checkpoint.Checkpoint
	upToDate map[[2]string]time.Time
}

func newCheckpointer(m *Mirror) (*checkpointer, error) {
	cl, err := network.NewClient(network.ClientConfig{Brokers: m.cfg.TargetBrokers, ClientID: m.cfg.ClientID, Logger: m.log.With("client", "offset-syncs")}.Secured(m.cfg.TargetSecurity),
		syncConsumerOpts()...)
	if err != nil {
		return nil, fmt.Errorf("mirror: offset syncs reader: %w", err)
	}
	return &checkpointer{m: m, tail: newSyncTail(cl),
		groups:   regexp.MustCompile(`^(?:` + m.cfg.Groups + `)$`),
		exclude:  regexp.MustCompile(`^(?:` + m.cfg.GroupsExclude + `)$`),
		written:  map[string]checkpoint.Checkpoint{},
		upToDate: map[[2]string]time.Time{},
	}, nil
}

func (c *checkpointer) run(ctx context.Context) {
	defer c.tail.cl.Close()
	t := time.NewTicker(c.m.cfg.CheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.m.syncs.flush(ctx); err != nil && ctx.Err() == nil {
			c.m.log.Warn("offset syncs not written; retrying", "err", err)
		}
		if err := c.emit(ctx); err != nil && ctx.Err() == nil {
			c.m.log.Warn("checkpoints not emitted; retrying", "err", err, "in", c.m.cfg.CheckpointInterval)
		}
		now := time.Now()
		for k, at := range c.upToDate {
			c.m.metrics.checkpointAge.WithLabelValues(k[0], k[1]).Set(now.Sub(at).Seconds())
		}
	}
}

// emit translates every matching group of every source once.
func (c *checkpointer) emit(ctx context.Context) error {
	if err := c.tail.catchUp(ctx); err != nil {
		return fmt.Errorf("reading %s: %w", OffsetSyncsTopic, err)
	}
	for _, s := range c.m.sources {
		if err := c.emitSource(ctx, s); err != nil {
			return fmt.Errorf("source %s: %w", s.cfg.Name, err)
		}
	}
	return nil
}

func (c *checkpointer) emitSource(ctx context.Context, s *source) error {
	listed, err := s.adm.ListGroups(ctx)
	if err != nil {
		return err
	}
	var recs []*kgo.Record
	var keys []string
	var news []checkpoint.Checkpoint
	cpTopic := c.m.cfg.CheckpointsTopic(s.cfg.Name)
	for _, group := range slices.Sorted(maps.Keys(listed)) {
		if group == c.m.cfg.GroupID || !c.groups.MatchString(group) || c.exclude.MatchString(group) {
			continue
		}
		offsets, err := s.adm.FetchOffsets(ctx, group)
		if err != nil {
			s.log.Warn("fetching a group's offsets for its checkpoint failed", "group", group, "err", err)
			continue
		}
		trs := c.m.translate(c.tail.store, s.cfg.Name, group, "", offsets)
		if len(trs) == 0 {
			continue
		}
		all := true
		var synced []Translation
		for _, tr := range trs {
			if !tr.OK {
				all = false
				continue
			}
			synced = append(synced, tr)
			cp := checkpoint.Checkpoint{Group: group, Topic: tr.TargetTopic, Partition: tr.Partition,
				Upstream: tr.SourceOffset, Downstream: tr.TargetOffset, Metadata: tr.Metadata}
			key := s.cfg.Name + "\x00" + string(cp.Key())
			if c.written[key] == cp {
				continue
			}
			recs = append(recs, &kgo.Record{Topic: cpTopic, Partition: 0, Key: cp.Key(), Value: cp.Value()})
			keys, news = append(keys, key), append(news, cp)
		}
		if c.m.cfg.SyncGroupOffsets && len(synced) > 0 {
			if err := c.syncGroup(ctx, group, synced); err != nil {
				s.log.Warn("syncing a group's offsets to the target failed", "group", group, "err", err)
			}
		}
		if all {
			c.upToDate[[2]string{s.cfg.Name, group}] = time.Now()
		} else if _, ok := c.upToDate[[2]string{s.cfg.Name, group}]; !ok {
			c.upToDate[[2]string{s.cfg.Name, group}] = time.Now() // first seen: its age counts from now
		}
	}
	if len(recs) == 0 {
		return nil
	}
	if err := c.m.target.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("writing %s: %w", cpTopic, err)
	}
	for i, k := range keys {
		c.written[k] = news[i]
	}
	return nil
}

// syncGroup commits the translations into the target's group of the same
// name (KIP-545) when it has no active member there, never moving an
// offset back (as MirrorMaker 2).
func (c *checkpointer) syncGroup(ctx context.Context, group string, trs []Translation) error {
	described, err := c.m.tadm.DescribeGroups(ctx, group)
	if err != nil {
		return err
	}
	if d, ok := described[group]; ok && d.Err == nil && len(d.Members) > 0 {
		return nil // in use on the target: its own commits win
	}
	current, err := c.m.tadm.FetchOffsets(ctx, group)
	if err != nil {
		return err
	}
	commit := kadm.Offsets{}
	for _, tr := range trs {
		if cur, ok := current.Lookup(tr.TargetTopic, tr.Partition); ok && cur.Err == nil && cur.At >= tr.TargetOffset {
			continue
		}
		commit.Add(kadm.Offset{Topic: tr.TargetTopic, Partition: tr.Partition, At: tr.TargetOffset, LeaderEpoch: -1, Metadata: tr.Metadata})
	}
	if len(commit) == 0 {
		return nil
	}
	resp, err := c.m.tadm.CommitOffsets(ctx, group, commit)
	if err == nil {
		err = resp.Error()
	}
	return err
}

// Translate translates the committed offsets of group on source (of
// topic, or of every topic cfg mirrors when empty) with the offset syncs
// on cfg's target, as the checkpoints do, and adds each target
// partition's end offset (TargetEnd). It is what `tributary mirror
// translate` prints.
func Translate(ctx context.Context, cfg Config, source, group, topic string) ([]Translation, error) {
	m, err := New(cfg, nil)
	if err != nil {
		return nil, err
	}
	var sc *SourceConfig
	for i := range m.cfg.Sources {
		if m.cfg.Sources[i].Name == source {
			sc = &m.cfg.Sources[i]
		}
	}
	if sc == nil {
		return nil, fmt.Errorf("%w: no source %q (source.%s.bootstrap.servers)", ErrInvalidConfig, source, source)
	}
	scl, err := network.NewClient(network.ClientConfig{Brokers: sc.Brokers, ClientID: m.cfg.ClientID, Logger: m.log}.Secured(sc.Security))
	if err != nil {
		return nil, fmt.Errorf("mirror: source %s: %w", source, err)
	}
	defer scl.Close()
	offsets, err := kadm.NewClient(scl).FetchOffsets(ctx, group)
	if err == nil {
		err = offsets.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("mirror: offsets of group %s on source %s: %w", group, source, err)
	}
	tcl, err := network.NewClient(network.ClientConfig{Brokers: m.cfg.TargetBrokers, ClientID: m.cfg.ClientID, Logger: m.log}.Secured(m.cfg.TargetSecurity),
		syncConsumerOpts()...)
	if err != nil {
		return nil, fmt.Errorf("mirror: target: %w", err)
	}
	defer tcl.Close()
	tail := newSyncTail(tcl)
	if err := tail.catchUp(ctx); err != nil {
		return nil, fmt.Errorf("mirror: reading %s on the target: %w", OffsetSyncsTopic, err)
	}
	trs := m.translate(tail.store, source, group, topic, offsets)
	var targets []string
	for _, tr := range trs {
		if !slices.Contains(targets, tr.TargetTopic) {
			targets = append(targets, tr.TargetTopic)
		}
	}
	ends, err := tail.adm.ListEndOffsets(ctx, targets...)
	if err != nil {
		return nil, fmt.Errorf("mirror: target end offsets: %w", err)
	}
	for i := range trs {
		trs[i].TargetEnd = -1
		if e, ok := ends.Lookup(trs[i].TargetTopic, trs[i].Partition); ok && e.Err == nil {
			trs[i].TargetEnd = e.Offset
		}
	}
	return trs, nil
}
