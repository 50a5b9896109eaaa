package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tributary/tributary/internal/coord"
)

// CreateTopic assigns partitions*replicationFactor replicas over the live
// brokers (see assignReplicas, and assignReplicasByRack when every broker
// has a rack) and writes the assignment with a new topic id and the config
// overrides in one multi-op, as Kafka's AdminUtils does; any member may
// call it. The controller then elects the leaders: the call returns before
// they are in Metadata (wait with AwaitMetadata).
//
// Errors wrap ErrInvalidTopic, ErrInvalidPartitions,
// ErrInvalidReplicationFactor, ErrInvalidTopicConfig or ErrTopicExists; a
// coordination error wrapping coord.ErrUnavailable leaves the outcome
// unknown (a retry then reports ErrTopicExists if it took effect).
func (m *Member) CreateTopic(ctx context.Context, name string, partitions int32, replicationFactor int16, configs map[string]string) error {
	return m.CreateTopicWithID(ctx, name, "", partitions, replicationFactor, configs)
}

// CreateTopicWithID is CreateTopic with the topic id chosen by the caller
// ("" for a new one; else it must pass ValidTopicID): a caller that retries
// after an unknown outcome tells its own earlier attempt from another
// creator's topic by the id in Metadata.
func (m *Member) CreateTopicWithID(ctx context.Context, name, id string, partitions int32, replicationFactor int16, configs map[string]string) error {
	return m.createTopic(ctx, name, id, configs, func(s coord.Session) ([][]int32, error) {
		names, _, err := s.Children(ctx, brokerIDsPath)
		if err != nil {
			return nil, fmt.Errorf("listing brokers: %w", err)
		}
		return assignLive(ctx, s, brokerIDs(names), partitions, replicationFactor)
	})
}

// CreateTopicWithAssignment is CreateTopicWithID with the replica lists
// given (partition id -> broker ids, the first one preferred as leader)
// instead of computed: a process whose coordinator lost its state
// re-registers a topic where its data lies this way, with the id recorded
// there. The brokers need not be live (their partitions stay leaderless
// until they join). The partition ids must be exactly 0..n-1 (else
// ErrInvalidPartitions); every list must hold the same number of distinct,
// non-negative ids (else ErrInvalidReplicationFactor). Other errors are
// CreateTopic's.
func (m *Member) CreateTopicWithAssignment(ctx context.Context, name, id string, replicas map[int32][]int32, configs map[string]string) error {
	return m.createTopic(ctx, name, id, configs, func(coord.Session) ([][]int32, error) {
		return checkAssignment(replicas)
	})
}

// checkAssignment turns a partition -> replicas map into the replica lists
// indexed by partition id, refusing what Kafka's CreateTopics refuses as
// INVALID_REPLICA_ASSIGNMENT.
func checkAssignment(replicas map[int32][]int32) ([][]int32, error) {
	if len(replicas) == 0 {
		return nil, fmt.Errorf("%w: the assignment has no partitions", ErrInvalidPartitions)
	}
	out := make([][]int32, len(replicas))
	for p, rs := range replicas {
		if p < 0 || int(p) >= len(out) {
			return nil, fmt.Errorf("%w: partition ids must be 0..%d, found %d", ErrInvalidPartitions, len(out)-1, p)
		}
		if len(rs) == 0 {
			return nil, fmt.Errorf("%w: partition %d has no replicas", ErrInvalidReplicationFactor, p)
		}
		sorted := slices.Sorted(slices.Values(rs))
		if sorted[0] < 0 {
			return nil, fmt.Errorf("%w: partition %d has a negative broker id: %v", ErrInvalidReplicationFactor, p, rs)
		}
		if len(slices.Compact(sorted)) != len(rs) {
			return nil, fmt.Errorf("%w: partition %d repeats a replica: %v", ErrInvalidReplicationFactor, p, rs)
		}
		out[p] = slices.Clone(rs)
	}
	for p, rs := range out {
		if len(rs) != len(out[0]) {
			return nil, fmt.Errorf("%w: partition %d has %d replicas, partition 0 has %d; all must have the same number",
				ErrInvalidReplicationFactor, p, len(rs), len(out[0]))
		}
	}
	return out, nil
}

// createTopic validates the name, id and configs, then writes the
// assignment that assign returns, with the id, and the config overrides in
// one multi-op. assign runs after the name was checked against the existing
// topics, so that an existing topic is reported before a bad assignment.
func (m *Member) createTopic(ctx context.Context, name, id string, configs map[string]string, assign func(coord.Session) ([][]int32, error)) error {
	if err := ValidateTopicName(name); err != nil {
		return err
	}
	if err := checkConfigNames(name, configs); err != nil {
		return err
	}
	switch {
	case id == "":
		var err error
		if id, err = NewTopicID(); err != nil {
			return err
		}
	case !ValidTopicID(id) || id == zeroTopicID:
		return fmt.Errorf("cluster: create topic %s: %q is not a topic id", name, id)
	}
	s, err := m.currentSession()
	if err != nil {
		return err
	}
	if err := m.checkNewTopic(ctx, s, name); err != nil {
		return err
	}
	replicas, err := assign(s)
	if err != nil {
		return fmt.Errorf("cluster: create topic %s: %w", name, err)
	}
	ops := []coord.Op{{Kind: coord.OpCreate, Path: topicPath(name), Data: encodeAssignment(replicas, id), Mode: coord.Persistent}}
	// A config node can outlive its topic (written by hand or by an older
	// tool); it is overwritten, not an error.
	ok, _, err := s.Exists(ctx, topicConfigPath(name))
	if err != nil {
		return fmt.Errorf("cluster: create topic %s: %w", name, err)
	}
	if ok {
		ops = append(ops, coord.Op{Kind: coord.OpSet, Path: topicConfigPath(name), Data: encodeConfig(configs), Version: coord.AnyVersion})
	} else {
		ops = append(ops, coord.Op{Kind: coord.OpCreate, Path: topicConfigPath(name), Data: encodeConfig(configs), Mode: coord.Persistent})
	}
	if err := s.Multi(ctx, ops...); err != nil {
		if errors.Is(err, coord.ErrNodeExists) {
			if exists, _, xerr := s.Exists(ctx, topicPath(name)); xerr == nil && exists {
				return fmt.Errorf("%w: topic '%s' already exists", ErrTopicExists, name)
			}
		}
		return fmt.Errorf("cluster: create topic %s: %w", name, err)
	}
	m.log.Info("cluster: topic created", "topic", name, "topic_id", id, "partitions", len(replicas),
		"replication_factor", len(replicas[0]), "assignment", replicas, "configs", configs)
	return nil
}

// checkConfigNames refuses an empty config name, and the legacy topic id
// key, which is no longer written anywhere.
func checkConfigNames(topic string, configs map[string]string) error {
	for k := range configs {
		switch k {
		case "":
			return fmt.Errorf("%w: topic %s: empty config name", ErrInvalidTopicConfig, topic)
		case LegacyTopicIDConfig:
			return fmt.Errorf("%w: topic %s: %s is reserved", ErrInvalidTopicConfig, topic, k)
		}
	}
	return nil
}

// checkNewTopic fails if name exists or collides with an existing topic.
func (m *Member) checkNewTopic(ctx context.Context, s coord.Session, name string) error {
	topics, _, err := s.Children(ctx, topicsPath)
	if err != nil {
		return fmt.Errorf("cluster: create topic %s: listing topics: %w", name, err)
	}
	if slices.Contains(topics, name) {
		marked, _, err := s.Exists(ctx, deleteTopicPath(name))
		if err == nil && marked {
			return fmt.Errorf("%w: topic '%s' is marked for deletion", ErrTopicExists, name)
		}
		return fmt.Errorf("%w: topic '%s' already exists", ErrTopicExists, name)
	}
	key := collisionKey(name)
	for _, t := range topics {
		if collisionKey(t) == key {
			return fmt.Errorf("%w: topic '%s' collides with existing topic '%s' ('.' and '_' are alike in metric names)",
				ErrInvalidTopic, name, t)
		}
	}
	return nil
}

// DeleteTopic requests the deletion of a topic by writing
// /admin/delete_topics/<topic>; the controller removes the topic's nodes
// and the request. It returns once the request is written (wait with
// AwaitMetadata for the topic to go). A topic already marked is not an
// error. An unknown topic fails with an error wrapping ErrUnknownTopic.
func (m *Member) DeleteTopic(ctx context.Context, name string) error {
	if err := ValidateTopicName(name); err != nil {
		return fmt.Errorf("%w: %w", ErrUnknownTopic, err)
	}
	s, err := m.currentSession()
	if err != nil {
		return err
	}
	ok, _, err := s.Exists(ctx, topicPath(name))
	if err != nil {
		return fmt.Errorf("cluster: delete topic %s: %w", name, err)
	}
	if !ok {
		return fmt.Errorf("%w: topic '%s' does not exist", ErrUnknownTopic, name)
	}
	_, err = s.CreateAll(ctx, deleteTopicPath(name), nil, coord.Persistent)
	if err != nil && !errors.Is(err, coord.ErrNodeExists) {
		return fmt.Errorf("cluster: delete topic %s: %w", name, err)
	}
	m.log.Info("cluster: topic deletion requested", "topic", name)
	return nil
}

// UpdateTopicConfigs rewrites a topic's overrides in /config/topics/<topic>:
// update changes the current overrides in place (an error from it aborts
// and is returned as is). The write is a compare-and-set, redone on top of
// any concurrent change until it lands or ctx ends. Brokers apply the new
// overrides when their metadata shows them; the call does not wait for it.
// It returns the overrides written; ErrUnknownTopic if there is no topic,
// ErrInvalidTopicConfig if update left an empty or reserved name. The
// legacy topic id key of a topic not migrated yet is hidden from update and
// moved to the topic node by the same write.
func (m *Member) UpdateTopicConfigs(ctx context.Context, name string, update func(configs map[string]string) error) (map[string]string, error) {
	s, err := m.currentSession()
	if err != nil {
		return nil, err
	}
	if ok, _, err := s.Exists(ctx, topicPath(name)); err != nil {
		return nil, fmt.Errorf("cluster: update configs of %s: %w", name, err)
	} else if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	path := topicConfigPath(name)
	for {
		configs := map[string]string{}
		data, st, err := s.Get(ctx, path)
		exists := err == nil
		switch {
		case exists:
			if configs, err = decodeConfig(name, data); err != nil {
				return nil, err
			}
		case !errors.Is(err, coord.ErrNoNode):
			return nil, fmt.Errorf("cluster: update configs of %s: %w", name, err)
		}
		legacy, hasLegacy := configs[LegacyTopicIDConfig]
		delete(configs, LegacyTopicIDConfig)
		if err := update(configs); err != nil {
			return nil, err
		}
		if err := checkConfigNames(name, configs); err != nil {
			return nil, err
		}
		switch {
		case hasLegacy:
			// Not migrated yet: the id moves to the topic node in the
			// same multi-op, as the controller's migration would do.
			err = m.moveLegacyTopicID(ctx, s, name, legacy, encodeConfig(configs), st.Version)
		case exists:
			_, err = s.Set(ctx, path, encodeConfig(configs), st.Version)
		default:
			_, err = s.Create(ctx, path, encodeConfig(configs), coord.Persistent)
		}
		switch {
		case err == nil:
			m.log.Info("cluster: topic configs updated", "topic", name, "configs", configs)
			return configs, nil
		case errors.Is(err, coord.ErrBadVersion), errors.Is(err, coord.ErrNodeExists):
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// another update won the race: redo ours on top of it
		default:
			return nil, fmt.Errorf("cluster: update configs of %s: %w", name, err)
		}
	}
}

// moveLegacyTopicID writes config (version configVersion) and, unless the
// topic node has an id already, the legacy id into the topic node (as
// version 3), in one multi-op checked against both nodes' versions. An
// invalid legacy id is dropped; the controller assigns a new one.
func (m *Member) moveLegacyTopicID(ctx context.Context, s coord.Session, name, legacy string, config []byte, configVersion int32) error {
	data, st, err := s.Get(ctx, topicPath(name))
	if errors.Is(err, coord.ErrNoNode) {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	if err != nil {
		return err
	}
	rec, err := decodeTopic(name, data)
	if err != nil {
		return err
	}
	op := coord.Op{Kind: coord.OpCheck, Path: topicPath(name), Version: st.Version}
	if rec.TopicID == "" && ValidTopicID(legacy) && legacy != zeroTopicID {
		rec.TopicID = legacy
		op = coord.Op{Kind: coord.OpSet, Path: topicPath(name), Data: encodeTopic(rec), Version: st.Version}
	}
	return s.Multi(ctx, op, coord.Op{Kind: coord.OpSet, Path: topicConfigPath(name), Data: config, Version: configVersion})
}
