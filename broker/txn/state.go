package txn

import "sort"

// State is a transaction's state, numbered as in Kafka's log (frozen).
type State int8

// Kafka's transaction states.
const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
	PrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is Kafka's name of the state, as DescribeTransactions and
// ListTransactions report it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState is the state named s (Kafka's names).
func ParseState(s string) (State, bool) {
	for i, n := range stateNames {
		if n == s {
			return State(i), true
		}
	}
	return 0, false
}

// metadata is one transactional id's state; guarded by its partition's mu.
type metadata struct {
	id         string
	producerID int64
	epoch      int16
	// lastProducerID and lastEpoch are what the producer held before the
	// last bump (kept in memory only, as Kafka), so that a retried
	// InitProducerId is recognized (KIP-360).
	lastProducerID int64
	lastEpoch      int16
	timeoutMs      int32
	state          State
	partitions     map[TopicPartition]struct{}
	// lastUpdate and start are in milliseconds; start is -1 outside a
	// transaction.
	lastUpdate, start int64
}

func (m *metadata) clone() *metadata {
	c := *m
	c.partitions = make(map[TopicPartition]struct{}, len(m.partitions))
	for tp := range m.partitions {
		c.partitions[tp] = struct{}{}
	}
	return &c
}

// sortedPartitions returns the transaction's partitions in order.
func (m *metadata) sortedPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(m.partitions))
	for tp := range m.partitions {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Transaction is a transactional id's state as DescribeTransactions and
// ListTransactions report it.
type Transaction struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	State           State
	TimeoutMs       int32
	// StartMs is -1 outside a transaction.
	StartMs    int64
	Partitions []TopicPartition
}

func (m *metadata) public() Transaction {
	return Transaction{
		TransactionalID: m.id, ProducerID: m.producerID, ProducerEpoch: m.epoch,
		State: m.state, TimeoutMs: m.timeoutMs, StartMs: m.start, Partitions: m.sortedPartitions(),
	}
}
