package txn

import (
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/group"
)

// StateTopic is the internal topic holding transaction metadata; its
// partition leaders are the transaction coordinators. Frozen (Kafka's).
const StateTopic = "__transaction_state"

// Record is one record of the state topic; Log is one partition of it as
// the coordinator uses it. They are the group coordinator's: both
// coordinators run over a compacted internal topic the same way.
type (
	Record = group.Record
	Log    = group.Log
)

// PartitionFor returns the partition of the state topic owning a
// transactional id: Utils.abs(transactionalId.hashCode()) % partitions, as
// Kafka places it (the same function as for groups).
func PartitionFor(transactionalID string, partitions int32) int32 {
	return group.PartitionFor(transactionalID, partitions)
}

// Record formats (frozen: Kafka's, so that DumpLogSegments
// --transaction-log-decoder reads them): key version 0 (the transactional
// id), value version 0 (producer id, epoch, timeout, state, partitions,
// last update and start timestamps); a null value removes the id.
const (
	keyVersion   = 0
	valueVersion = 0
)

// ErrCorruptRecord marks a record of the state topic that does not decode.
var ErrCorruptRecord = errors.New("txn: corrupt transaction state record")

// TopicPartition names a partition taking part in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// ByTopic groups tps by topic, topics in the order they first appear and
// each topic's partitions in their order: the shape of Kafka's requests and
// responses that list partitions under their topic.
func ByTopic(tps []TopicPartition) (topics []string, partitions [][]int32) {
	at := map[string]int{}
	for _, tp := range tps {
		i, ok := at[tp.Topic]
		if !ok {
			i = len(topics)
			at[tp.Topic] = i
			topics = append(topics, tp.Topic)
			partitions = append(partitions, nil)
		}
		partitions[i] = append(partitions[i], tp.Partition)
	}
	return topics, partitions
}

func stateKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = keyVersion, id
	return k.AppendTo(nil)
}

// stateRecord encodes m as Kafka's TransactionLogValue v0.
func stateRecord(m *metadata) Record {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = m.producerID, m.epoch, m.timeoutMs
	v.State = kmsg.TransactionState(m.state)
	v.LastUpdateTimestamp, v.StartTimestamp = m.lastUpdate, m.start
	byTopic := map[string][]int32{}
	for tp := range m.partitions {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
	}
	topics := make([]string, 0, len(byTopic))
	for t := range byTopic {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	v.Topics = []kmsg.TxnMetadataValueTopic{} // Kafka writes an empty array, not null
	for _, t := range topics {
		ps := byTopic[t]
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		vt := kmsg.NewTxnMetadataValueTopic()
		vt.Topic, vt.Partitions = t, ps
		v.Topics = append(v.Topics, vt)
	}
	return Record{Key: stateKey(m.id), Value: v.AppendTo(nil)}
}

func tombstone(id string) Record { return Record{Key: stateKey(id)} }

// decodeRecord returns the transactional id of r and its metadata, nil for
// a tombstone.
func decodeRecord(r Record) (string, *metadata, error) {
	rd := kbin.Reader{Src: r.Key}
	if ver := rd.Int16(); !rd.Ok() || ver != keyVersion {
		return "", nil, fmt.Errorf("%w: key version", ErrCorruptRecord)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(r.Key); err != nil {
		return "", nil, fmt.Errorf("%w: key: %v", ErrCorruptRecord, err)
	}
	if r.Value == nil {
		return k.TransactionalID, nil, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(r.Value); err != nil {
		return "", nil, fmt.Errorf("%w: value: %v", ErrCorruptRecord, err)
	}
	if v.State < 0 || v.State > kmsg.TransactionState(PrepareEpochFence) {
		return "", nil, fmt.Errorf("%w: state %d", ErrCorruptRecord, v.State)
	}
	m := &metadata{
		id: k.TransactionalID, producerID: v.ProducerID, epoch: v.ProducerEpoch,
		lastProducerID: -1, lastEpoch: -1,
		timeoutMs: v.TimeoutMillis, state: State(v.State),
		lastUpdate: v.LastUpdateTimestamp, start: v.StartTimestamp,
		partitions: map[TopicPartition]struct{}{},
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.partitions[TopicPartition{t.Topic, p}] = struct{}{}
		}
	}
	return k.TransactionalID, m, nil
}
