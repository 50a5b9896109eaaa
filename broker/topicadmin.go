package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/coord"
)

// adminWait bounds CreateTopic and DeleteTopic waits when the request
// gives no timeout of its own (auto-creation, restore).
const adminWait = 30 * time.Second

// createTopic registers a topic of n partitions (n <= 0: num.partitions)
// with the config overrides, which must have been validated, and a fresh
// topic id, then waits until it is served. With existingOK an existing
// topic is not an error.
// rf <= 0 means default.replication.factor (for the audit topic, see
// creationDefaults).
func (b *Broker) createTopic(ctx context.Context, name string, n int32, rf int16, overrides map[string]string, existingOK bool) error {
	if err := validateTopicName(name); err != nil {
		return err
	}
	m, err := b.clusterMember()
	if err != nil {
		return err
	}
	defaultN, defaultRF := creationDefaults(b.cfg, name, len(m.Metadata().Brokers))
	if n <= 0 {
		n = defaultN
	}
	if rf <= 0 {
		rf = defaultRF
	}
	id, err := cluster.NewTopicID()
	if err != nil {
		return err
	}
	overrides = auditOverrides(b.cfg.Audit, name, overrides)
	err = b.createRetrying(ctx, m, name, id, n, rf, overrides)
	switch {
	case errors.Is(err, cluster.ErrTopicExists) && existingOK:
	case errors.Is(err, cluster.ErrTopicExists):
		return fmt.Errorf("%w: %w", ErrTopicExists, err)
	case errors.Is(err, cluster.ErrInvalidTopic):
		return fmt.Errorf("%w: %w", ErrInvalidTopic, err)
	case err != nil:
		return err
	}
	return b.awaitServed(ctx, b.topicReady(name))
}

// adminRetryBackoff spaces attempts of a topic creation whose coordination
// call failed without an answer.
const adminRetryBackoff = 200 * time.Millisecond

// createRetrying registers the topic, trying again while ctx lasts when the
// coordination service could not answer: a ZooKeeper leader election (or
// a lost connection) leaves a write's outcome unknown (coord.ErrUnavailable),
// and a session that expired meanwhile wrote nothing. The topic id tells an
// earlier attempt that took effect (success) from another creator's topic
// of the same name (ErrTopicExists).
func (b *Broker) createRetrying(ctx context.Context, m *cluster.Member, name, id string, n int32, rf int16, configs map[string]string) error {
	unknown := false
	for {
		err := m.CreateTopicWithID(ctx, name, id, n, rf, configs)
		if errors.Is(err, cluster.ErrTopicExists) && unknown {
			snap, werr := m.AwaitMetadata(ctx, func(s cluster.Snapshot) bool { _, ok := s.Topics[name]; return ok })
			if werr == nil && snap.Topics[name].ID == id {
				return nil // our earlier attempt
			}
			return err
		}
		if !errors.Is(err, coord.ErrUnavailable) && !errors.Is(err, coord.ErrSessionExpired) {
			return err
		}
		unknown = unknown || errors.Is(err, coord.ErrUnavailable)
		b.logger.Warn("creating topic: coordination unavailable; trying again", "topic", name, "err", err)
		select {
		case <-time.After(adminRetryBackoff):
		case <-ctx.Done():
			return err
		}
	}
}

// CreateTopic creates a topic with n partitions (n <= 0: num.partitions)
// and returns once every partition has a leader and this broker serves the
// ones it leads.
func (b *Broker) CreateTopic(ctx context.Context, name string, n int32) error {
	return b.createTopic(ctx, name, n, 0, nil, false)
}

// CreateTopicWithConfigs is CreateTopic with topic config overrides
// (Kafka's names: retention.ms, segment.bytes, max.message.bytes, ...).
// Unknown keys and invalid values fail with an error wrapping
// ErrInvalidTopicConfig.
func (b *Broker) CreateTopicWithConfigs(ctx context.Context, name string, n int32, configs map[string]string) error {
	if _, err := config.ResolveTopic(b.topicDefaults(), configs); err != nil {
		return err
	}
	return b.createTopic(ctx, name, n, 0, configs, false)
}

// DeleteTopic deletes a topic and returns once it has left this broker's
// metadata and this broker's share of its data is deleted.
func (b *Broker) DeleteTopic(ctx context.Context, name string) error {
	m, err := b.clusterMember()
	if err != nil {
		return err
	}
	if err := m.DeleteTopic(ctx, name); err != nil {
		if errors.Is(err, cluster.ErrUnknownTopic) {
			return fmt.Errorf("%w: %w", ErrUnknownTopic, err)
		}
		return err
	}
	return b.awaitServed(ctx, topicGone(name))
}

// adminErrorCodes is the one table from topic administration errors (the
// cluster's and the broker's) to Kafka error codes; the first entry that
// errors.Is matches wins.
var adminErrorCodes = []struct {
	err  error
	code *kerr.Error
}{
	{ErrTopicExists, kerr.TopicAlreadyExists},
	{cluster.ErrTopicExists, kerr.TopicAlreadyExists},
	{ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{cluster.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{ErrInvalidTopic, kerr.InvalidTopicException},
	{cluster.ErrInvalidTopic, kerr.InvalidTopicException},
	{cluster.ErrInvalidPartitions, kerr.InvalidPartitions},
	{cluster.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{cluster.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{cluster.ErrReassignmentInProgress, kerr.ReassignmentInProgress},
	{cluster.ErrNotController, kerr.NotController},
	{cluster.ErrNoReassignmentInProgress, kerr.NoReassignmentInProgress},
	{cluster.ErrElectionNotNeeded, kerr.ElectionNotNeeded},
	{cluster.ErrPreferredLeaderNotAvailable, kerr.PreferredLeaderNotAvailable},
	{cluster.ErrEligibleLeadersNotAvailable, kerr.EligibleLeadersNotAvailable},
	{cluster.ErrInvalidTopicConfig, kerr.InvalidConfig},
	{config.ErrInvalidTopicConfig, kerr.InvalidConfig},
	// The request may still take effect: a retriable code makes the client
	// try again and find out.
	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{coord.ErrUnavailable, kerr.RequestTimedOut},
	{ErrClosed, kerr.NotController},
	{cluster.ErrClosed, kerr.NotController},
}

// adminErrorCode maps an error of createTopic or DeleteTopic.
func adminErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, e := range adminErrorCodes {
		if errors.Is(err, e.err) {
			return e.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}
