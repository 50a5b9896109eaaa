package broker

import (
	"strconv"

	"github.com/tributary/tributary/broker/config"
)

// AuditTopic is the audit topic, audit.DefaultTopic: the counts every
// tier of the pipeline publishes (package audit). The broker creates it,
// when its creator leaves the layout to the broker (auto-creation, or
// CreateTopics with -1), the way Kafka creates its internal topics:
// audit.topic.num.partitions partitions and audit.topic.replication.factor
// replicas capped at the live brokers, so that one dead broker leaves every
// audit partition a leader. An audit topic configured under another name is
// an ordinary topic.
const AuditTopic = "__audit"

// auditOverrides adds the audit topic's own defaults (delete policy,
// audit.topic.retention.ms) to the overrides it is created with, unless
// its creator set them.
func auditOverrides(a config.Audit, topic string, given map[string]string) map[string]string {
	if topic != AuditTopic {
		return given
	}
	out := map[string]string{"cleanup.policy": config.PolicyDelete, "retention.ms": strconv.FormatInt(a.RetentionMs(), 10)}
	for k, v := range given {
		out[k] = v
	}
	return out
}

// creationDefaults returns the partitions and replication factor a new
// topic gets when its creator leaves them to the broker, with live brokers
// registered: num.partitions and default.replication.factor, except for
// the audit topic (see AuditTopic).
func creationDefaults(c config.Config, topic string, live int) (int32, int16) {
	c = c.WithDefaults()
	if topic != AuditTopic {
		return c.NumPartitions, c.DefaultReplicationFactor
	}
	n, rf := c.Audit.Partitions, c.Audit.Replication
	if n == 0 {
		n = c.NumPartitions
	}
	if rf == 0 {
		rf = config.DefaultAuditTopicReplication
	}
	return n, cappedReplication(rf, live)
}

// cappedReplication is want capped at the live brokers (at least 1), as
// Kafka creates its internal topics: a cluster smaller than the factor
// still gets the topic, with fewer replicas.
func cappedReplication(want int16, live int) int16 {
	return int16(min(int(want), max(live, 1)))
}
