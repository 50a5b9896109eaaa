package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// LegacyTopicIDConfig is the key under which Tributary kept a topic's id in
// /config/topics/<topic> before the id moved to the topic node (Kafka 2.8's
// topic_id). It is read, for topics not migrated yet, and never written:
// Kafka's ConfigCommand refuses to alter a topic whose config node holds a
// key it does not know.
const LegacyTopicIDConfig = "tributary.topic.id"

// zeroTopicID is Kafka's Uuid.ZERO_UUID, which stands for "no id".
const zeroTopicID = "AAAAAAAAAAAAAAAAAAAAAA"

// configChangeExpiry is how long a /config/changes notification is kept:
// Kafka's ZkNodeChangeNotificationListener default (changeExpirationMs).
const configChangeExpiry = 15 * time.Minute

// configChangePurgeInterval spaces the controller's scans of
// /config/changes.
const configChangePurgeInterval = time.Minute

// configChangePrefix names Kafka's config change notifications.
const configChangePrefix = "config_change_"

// NewTopicID returns a random topic id in Kafka's text form (a 128-bit
// UUID in URL-safe base64 without padding, 22 characters), avoiding what
// Kafka's Uuid.randomUuid avoids: the zero id, and ids starting with '-',
// which command-line tools would take for an option.
func NewTopicID() (string, error) {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("cluster: generating a topic id: %w", err)
		}
		id := base64.RawURLEncoding.EncodeToString(b[:])
		if id != zeroTopicID && !strings.HasPrefix(id, "-") {
			return id, nil
		}
	}
}

// ValidTopicID reports whether id is a topic id Kafka's Uuid.fromString
// reads: 22 characters of URL-safe base64 holding 16 bytes. The zero id is
// valid in form but means "no id".
func ValidTopicID(id string) bool {
	if len(id) != 22 {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(id)
	return err == nil && len(b) == 16
}

// topicIDKeeper is a controller term's record of the topic ids it found in
// the topic nodes (so each topic is read once per term) and of when it last
// purged /config/changes.
type topicIDKeeper struct {
	// seen maps a topic to the id its node holds and the node's creation
	// time, which tells a node rewritten in place from a re-created topic.
	seen      map[string]seenTopicID
	lastPurge time.Time
}

type seenTopicID struct {
	id      string
	created time.Time
}

// reconcileTopicNodes keeps the topic nodes in Kafka 2.8's shape: every
// topic gets its id in /brokers/topics/<topic> (v3 topic_id), moved there
// from the legacy config key of topics created before, or a new one for a
// topic written without (Kafka's TopicCommand --zookeeper, as Kafka's
// controller assigns ids too). It also purges expired config change
// notifications. It is one step of reconcile.
func (c *controller) reconcileTopicNodes(ctx context.Context, snap Snapshot) error {
	if c.topicIDs == nil {
		c.topicIDs = &topicIDKeeper{seen: map[string]seenTopicID{}}
	}
	var errs []error
	for _, name := range snap.TopicNames() {
		t := snap.Topics[name]
		if t.Deleting || (t.ID != "" && c.topicIDs.seen[name].id == t.ID) {
			continue
		}
		if err := c.settleTopicID(ctx, name); err != nil {
			if errors.Is(err, errStaleController) || sessionEnded(err) {
				return err
			}
			errs = append(errs, err)
		}
	}
	for name := range c.topicIDs.seen {
		if _, ok := snap.Topics[name]; !ok {
			delete(c.topicIDs.seen, name)
		}
	}
	if now := c.m.cfg.now(); now.Sub(c.topicIDs.lastPurge) >= configChangePurgeInterval {
		c.topicIDs.lastPurge = now
		c.purgeConfigChanges(ctx, now)
	}
	return errors.Join(errs...)
}

// settleTopicID reads a topic's nodes and, when its id is not in the topic
// node or the config node still holds the legacy key, rewrites both in one
// fenced multi-op that checks their versions: a concurrent writer makes it
// fail, and the snapshot its write brings retries it.
func (c *controller) settleTopicID(ctx context.Context, name string) error {
	data, st, err := c.s.Get(ctx, topicPath(name))
	if errors.Is(err, coord.ErrNoNode) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return c.failed(ctx, "reading "+topicPath(name), err)
	}
	rec, err := decodeTopic(name, data)
	if err != nil {
		return nil // the cache warns; the topic is not in the metadata
	}
	cfgPath := topicConfigPath(name)
	cfgData, cfgStat, err := c.s.Get(ctx, cfgPath)
	hasConfig := err == nil
	if err != nil && !errors.Is(err, coord.ErrNoNode) {
		return c.failed(ctx, "reading "+cfgPath, err)
	}
	var configs map[string]string
	if hasConfig {
		if configs, err = decodeConfig(name, cfgData); err != nil {
			configs = nil // left alone: the cache warns about it
		}
	}
	legacy, hasLegacy := configs[LegacyTopicIDConfig]
	if rec.TopicID != "" && !hasLegacy {
		c.topicIDs.seen[name] = seenTopicID{id: rec.TopicID, created: st.Created}
		return nil
	}
	id, how := rec.TopicID, "legacy config key dropped"
	switch {
	case id != "":
	case ValidTopicID(legacy) && legacy != zeroTopicID:
		id, how = legacy, "moved from the config node"
	default:
		if prev, ok := c.topicIDs.seen[name]; ok && prev.created.Equal(st.Created) {
			// The node was rewritten in place by a tool that does not
			// know topic ids: the topic is the same, and so is its id
			// (a new one would make the brokers discard its data).
			id, how = prev.id, "restored after a rewrite without it"
			break
		}
		if id, err = NewTopicID(); err != nil {
			return err
		}
		how = "assigned"
		if hasLegacy {
			c.m.log.Warn("cluster: ignoring an invalid legacy topic id", "topic", name, "value", legacy)
		}
	}
	ops := []coord.Op{c.fence()}
	if rec.TopicID != id {
		rec.TopicID = id
		ops = append(ops, coord.Op{Kind: coord.OpSet, Path: topicPath(name), Data: encodeTopic(rec), Version: st.Version})
	} else {
		ops = append(ops, coord.Op{Kind: coord.OpCheck, Path: topicPath(name), Version: st.Version})
	}
	if hasLegacy {
		delete(configs, LegacyTopicIDConfig)
		ops = append(ops, coord.Op{Kind: coord.OpSet, Path: cfgPath, Data: encodeConfig(configs), Version: cfgStat.Version})
	}
	if err := c.s.Multi(ctx, ops...); err != nil {
		return c.failed(ctx, "writing the topic id of "+name, err)
	}
	c.topicIDs.seen[name] = seenTopicID{id: id, created: st.Created}
	c.m.log.Info("cluster: topic id "+how, "topic", name, "topic_id", id, "epoch", c.epoch)
	return nil
}

// purgeConfigChanges deletes the notifications under /config/changes that
// are older than configChangeExpiry, as every Kafka broker does. Brokers
// here do not need them (each watches the config nodes themselves), but
// Kafka's ConfigCommand writes one per change and nobody else would remove
// them. Failures are logged and left to the next purge.
func (c *controller) purgeConfigChanges(ctx context.Context, now time.Time) {
	names, _, err := c.s.Children(ctx, configChangesPath)
	if err != nil {
		if !errors.Is(err, coord.ErrNoNode) {
			c.m.log.Debug("cluster: listing config change notifications", "err", err)
		}
		return
	}
	purged := 0
	for _, n := range names {
		if !strings.HasPrefix(n, configChangePrefix) {
			continue
		}
		path := coord.Join(configChangesPath, n)
		ok, st, err := c.s.Exists(ctx, path)
		if err != nil || !ok || now.Sub(st.Created) < configChangeExpiry {
			continue
		}
		if err := c.s.Delete(ctx, path, coord.AnyVersion); err != nil && !errors.Is(err, coord.ErrNoNode) {
			c.m.log.Debug("cluster: deleting a config change notification", "path", path, "err", err)
			continue
		}
		purged++
	}
	if purged > 0 {
		c.m.log.Info("cluster: purged expired config change notifications", "count", purged)
	}
}
