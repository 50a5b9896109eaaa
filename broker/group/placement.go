package group

import "unicode/utf16"

// OffsetsTopic is the internal topic holding committed offsets; its
// partition leaders are the group coordinators.
const OffsetsTopic = "__consumer_offsets"

// PartitionFor returns the partition of the offsets topic that owns group,
// as Kafka computes it: Utils.abs(groupId.hashCode()) % partitions, with
// Java's String.hashCode over UTF-16 code units and Kafka's abs, which
// maps Integer.MIN_VALUE to 0 (it masks the sign bit). Every Kafka broker
// and tool agrees on this placement, so it is frozen.
func PartitionFor(group string, partitions int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	return (h & 0x7fffffff) % partitions
}
