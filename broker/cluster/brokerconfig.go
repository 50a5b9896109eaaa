package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/tributary/tributary/broker/entityconfig"
	"github.com/tributary/tributary/internal/coord"
)

// ValidBrokerEntity reports whether entity names a dynamic broker config
// node: DefaultBrokerEntity or a non-negative broker id in decimal.
func ValidBrokerEntity(entity string) bool {
	if entity == DefaultBrokerEntity {
		return true
	}
	id, err := strconv.ParseInt(entity, 10, 32)
	return err == nil && id >= 0 && strconv.FormatInt(id, 10) == entity
}

// UpdateBrokerConfigs rewrites the dynamic broker configs of entity
// (DefaultBrokerEntity or a broker id) in /config/brokers/<entity>: update
// changes the current configs in place (an error from it aborts and is
// returned as is). The write is a compare-and-set, redone on top of any
// concurrent change until it lands or ctx ends; a change notification
// (/config/changes/config_change_<seq>, entity_path "brokers/<entity>")
// follows it, as Kafka's ConfigCommand writes, for Kafka brokers sharing
// the ensemble. Members apply the configs when their metadata shows them
// (they watch the nodes, not the notifications); the call does not wait.
// It returns the configs written.
func (m *Member) UpdateBrokerConfigs(ctx context.Context, entity string, update func(configs map[string]string) error) (map[string]string, error) {
	if !ValidBrokerEntity(entity) {
		return nil, fmt.Errorf("%w: broker config entity %q is neither %s nor a broker id", ErrInvalidConfig, entity, DefaultBrokerEntity)
	}
	s, err := m.currentSession()
	if err != nil {
		return nil, err
	}
	path := brokerConfigPath(entity)
	for {
		configs := map[string]string{}
		data, st, err := s.Get(ctx, path)
		exists := err == nil
		switch {
		case exists:
			if configs, err = decodeConfig("brokers/"+entity, data); err != nil {
				return nil, err
			}
		case !errors.Is(err, coord.ErrNoNode):
			return nil, fmt.Errorf("cluster: update broker configs of %s: %w", entity, err)
		}
		if err := update(configs); err != nil {
			return nil, err
		}
		for k := range configs {
			if k == "" {
				return nil, fmt.Errorf("%w: broker %s: empty config name", ErrInvalidTopicConfig, entity)
			}
		}
		if exists {
			_, err = s.Set(ctx, path, encodeConfig(configs), st.Version)
		} else {
			_, err = s.CreateAll(ctx, path, encodeConfig(configs), coord.Persistent)
		}
		switch {
		case err == nil:
			m.log.Info("cluster: broker configs updated", "entity", entity, "configs", configs)
			m.notifyConfigChange(ctx, s, "brokers/"+entity)
			return configs, nil
		case errors.Is(err, coord.ErrBadVersion), errors.Is(err, coord.ErrNodeExists):
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// another update won the race: redo ours on top of it
		default:
			return nil, fmt.Errorf("cluster: update broker configs of %s: %w", entity, err)
		}
	}
}

// notifyConfigChange writes Kafka's change notification for entityPath
// (entityconfig.Notify). Members do not need it, so a failure is only
// logged.
func (m *Member) notifyConfigChange(ctx context.Context, s coord.Session, entityPath string) {
	if err := entityconfig.Notify(ctx, s, entityPath); err != nil {
		m.log.Warn("cluster: writing a config change notification", "entity_path", entityPath, "err", err)
	}
}
