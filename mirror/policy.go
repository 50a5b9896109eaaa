package mirror

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/mirror/origin"
)

// MirrorMaker 2's replication policies, by the class names of
// replication.policy.class.
const (
	// DefaultReplicationPolicy names a target topic "<source><separator><topic>"
	// and never mirrors a topic back to the cluster it came from.
	DefaultReplicationPolicy = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
	// IdentityReplicationPolicy keeps the topic's name; loops are prevented by
	// the origin header alone.
	IdentityReplicationPolicy = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
	// DefaultReplicationSeparator is replication.policy.separator's default.
	DefaultReplicationSeparator = "."
	// OffsetSyncsTopic is the compacted topic on the target where the mirror
	// records which target offsets its source offsets landed at (package
	// mirror/offsetsync owns its format).
	OffsetSyncsTopic = "tributary.offset-syncs.internal"
)

// policy reports which replication policy the configuration names:
// "" for topic.rename.
func (c Config) policy() string { return c.ReplicationPolicy }

func (c Config) separator() string {
	if c.ReplicationSeparator == "" {
		return DefaultReplicationSeparator
	}
	return c.ReplicationSeparator
}

// targetTopic is where topic of source lands.
func (c Config) targetTopic(source, topic string) string {
	switch {
	case topic == AuditTopic:
		return topic
	case c.policy() == DefaultReplicationPolicy:
		return source + c.separator() + topic
	case c.policy() == IdentityReplicationPolicy:
		return topic
	}
	rename := c.TopicRename
	if rename == "" {
		rename = DefaultTopicRename
	}
	return strings.NewReplacer("${source}", source, "${topic}", topic).Replace(rename)
}

// CheckpointsTopic is the target topic holding source's checkpoints,
// MirrorMaker 2's "<source><separator>checkpoints<separator>internal".
func (c Config) CheckpointsTopic(source string) string {
	sep := c.separator()
	return source + sep + "checkpoints" + sep + "internal"
}

// internalTopic reports whether a topic is MirrorMaker 2's or ours, never
// mirrored: ReplicationPolicy.isInternalTopic (names starting with "." or
// "__", ending with ".internal" or "-internal") under a replication
// policy; the mirror's own topics under topic.rename.
func (c Config) internalTopic(topic string) bool {
	if topic == OffsetSyncsTopic || strings.HasSuffix(topic, c.separator()+"checkpoints"+c.separator()+"internal") {
		return true
	}
	if c.policy() == "" {
		return false
	}
	return strings.HasPrefix(topic, ".") || strings.HasPrefix(topic, "__") ||
		strings.HasSuffix(topic, ".internal") || strings.HasSuffix(topic, "-internal")
}

// isCycle is MirrorSourceConnector.isCycle under the default policy: a
// topic whose name says it came from the target (at any hop,
// "<target>.<x>", "dc3.<target>.<x>") is not mirrored back to it.
func (c Config) isCycle(topic string) bool {
	if c.policy() != DefaultReplicationPolicy {
		return false
	}
	sep := c.separator()
	for {
		source, rest, ok := strings.Cut(topic, sep)
		if !ok || source == "" {
			return false
		}
		if source == c.TargetName {
			return true
		}
		topic = rest
	}
}

// looped reports whether a record came from the target cluster, by any of
// its origin headers (a record mirrored twice carries two): such a record
// is never mirrored back, whatever the policy.
func (c Config) looped(headers []kgo.RecordHeader) bool {
	for _, h := range headers {
		if h.Key != origin.Header {
			continue
		}
		if s, _, _, err := origin.Parse(h.Value); err == nil && s == c.TargetName {
			return true
		}
	}
	return false
}
