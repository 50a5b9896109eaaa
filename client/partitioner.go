package client

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Partitioner chooses the partition of a message among numPartitions
// (always >= 1). It must return a value in [0, numPartitions); anything else
// fails the send with ErrBadPartition. A Partitioner is called from the
// producer's goroutines and must be safe for concurrent use.
type Partitioner interface {
	Partition(m *Message, numPartitions int) int
}

// PartitionerFunc adapts a function to Partitioner.
type PartitionerFunc func(m *Message, numPartitions int) int

// Partition calls f.
func (f PartitionerFunc) Partition(m *Message, n int) int { return f(m, n) }

// Murmur2 is the Java client's org.apache.kafka.common.utils.Utils.murmur2:
// MurmurHash2 (32-bit) with seed 0x9747b28c, reading little-endian 4-byte
// blocks and mixing the tail bytes as the Java code does (bytes are
// sign-extended there, but masking with 0xff makes that moot).
func Murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	length := len(data)
	h := seed ^ uint32(length)
	n4 := length / 4
	for i := 0; i < n4; i++ {
		j := i * 4
		k := uint32(data[j]) | uint32(data[j+1])<<8 | uint32(data[j+2])<<16 | uint32(data[j+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := n4 * 4
	switch length % 4 {
	case 3:
		h ^= uint32(data[tail+2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[tail+1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[tail])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// KeyPartition is where the Java client's default partitioner puts a
// non-null key: Utils.toPositive(Utils.murmur2(key)) % numPartitions.
// toPositive clears the sign bit (it is not Math.abs).
func KeyPartition(key []byte, numPartitions int) int {
	return int(uint32(Murmur2(key))&0x7fffffff) % numPartitions
}

// HashPartitioner puts a keyed message where the Java client would
// (KeyPartition) and spreads messages without a key (nil Key) round-robin.
// It is the producer's default.
func HashPartitioner() Partitioner {
	rr := RoundRobinPartitioner()
	return PartitionerFunc(func(m *Message, n int) int {
		if m.Key == nil {
			return rr.Partition(m, n)
		}
		return KeyPartition(m.Key, n)
	})
}

// RoundRobinPartitioner cycles through the partitions, ignoring keys.
func RoundRobinPartitioner() Partitioner {
	var next atomic.Uint64
	return PartitionerFunc(func(_ *Message, n int) int {
		return int((next.Add(1) - 1) % uint64(n))
	})
}

// RandomPartitioner picks a uniformly random partition, ignoring keys.
func RandomPartitioner() Partitioner {
	return PartitionerFunc(func(_ *Message, n int) int { return rand.IntN(n) })
}

// ManualPartitioner uses Message.Partition as given.
func ManualPartitioner() Partitioner {
	return PartitionerFunc(func(m *Message, _ int) int { return int(m.Partition) })
}

// kgoPartitioner adapts p to franz-go. It reports itself consistent so that
// kgo never moves a record to another partition when one is unavailable:
// a key must land where the Java client would put it.
func kgoPartitioner(p Partitioner) kgo.Partitioner {
	return kgo.BasicConsistentPartitioner(func(topic string) func(*kgo.Record, int) int {
		return func(r *kgo.Record, n int) int {
			m := Message{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
			if len(r.Headers) > 0 {
				m.Headers = make([]Header, len(r.Headers))
				for i, h := range r.Headers {
					m.Headers[i] = Header{Key: h.Key, Value: h.Value}
				}
			}
			return p.Partition(&m, n)
		}
	})
}
