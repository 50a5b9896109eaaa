package cluster

import (
	"fmt"
	"strings"
)

// MaxTopicNameLength is Kafka's limit: 249 characters, so that the
// partition directory name "<topic>-<partition>" fits in 255.
const MaxTopicNameLength = 249

// ValidateTopicName applies Kafka's topic naming rules: 1 to 249
// characters out of [a-zA-Z0-9._-], and neither "." nor "..". The error
// wraps ErrInvalidTopic.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopic, name)
	case len(name) > MaxTopicNameLength:
		return fmt.Errorf("%w: %q is longer than %d characters", ErrInvalidTopic, name, MaxTopicNameLength)
	}
	for _, r := range name {
		if !legalTopicRune(r) {
			return fmt.Errorf("%w: %q contains %q; legal characters are ASCII letters, digits, '.', '_' and '-'",
				ErrInvalidTopic, name, r)
		}
	}
	return nil
}

func legalTopicRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// collisionKey maps names that Kafka's metric names cannot tell apart
// ("a.b" and "a_b") to one key.
func collisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }

// assignReplicas spreads partitions over brokers (sorted ids) as Kafka's
// AdminUtils.assignReplicasToBrokers does without racks, starting at the
// first broker instead of a random one: the first replica of partition p is
// broker p mod n, so leaders are spread evenly; the followers are shifted by
// one more broker each time the partition ids wrap around the broker list,
// so that no two brokers always follow each other.
func assignReplicas(brokers []int32, partitions int32, replicationFactor int16) ([][]int32, error) {
	n := int32(len(brokers))
	rf := int32(replicationFactor)
	if err := checkFactor(n, partitions, replicationFactor); err != nil {
		return nil, err
	}
	out := make([][]int32, partitions)
	shift := int32(0)
	for p := range partitions {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := p % n
		replicas := make([]int32, 0, rf)
		replicas = append(replicas, brokers[first])
		for j := range rf - 1 {
			replicas = append(replicas, brokers[(first+1+(shift+j)%(n-1))%n])
		}
		out[p] = replicas
	}
	return out, nil
}

// checkFactor refuses what Kafka's assignment refuses: no partitions, no
// replicas, or more replicas than brokers.
func checkFactor(brokers, partitions int32, replicationFactor int16) error {
	switch {
	case partitions <= 0:
		return fmt.Errorf("%w: %d (must be at least 1)", ErrInvalidPartitions, partitions)
	case replicationFactor <= 0:
		return fmt.Errorf("%w: %d (must be at least 1)", ErrInvalidReplicationFactor, replicationFactor)
	case int32(replicationFactor) > brokers:
		return fmt.Errorf("%w: replication factor %d larger than available brokers: %d",
			ErrInvalidReplicationFactor, replicationFactor, brokers)
	}
	return nil
}
