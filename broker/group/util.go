package group

import (
	"cmp"
	"maps"
	"slices"
)

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

// sortedTopicPartitions returns the set's partitions by topic, then
// partition.
func sortedTopicPartitions(set map[TopicPartition]bool) []TopicPartition {
	return slices.SortedFunc(maps.Keys(set), func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}
