package group

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record is one record of the offsets topic: a key and a value, nil for a
// tombstone. Replay also reports what a record's batch says about
// transactions: a transactional record (a TxnOffsetCommit's) carries its
// producer id, and a transaction marker comes as a Control record (no key
// or value of ours) saying whether the producer's transaction committed.
type Record struct {
	Key, Value []byte
	// ProducerID is the producer of a Transactional or Control record.
	ProducerID    int64
	Transactional bool
	Control       bool
	// Commit: a Control record is a COMMIT marker (else ABORT).
	Commit bool
}

// Record formats (frozen: Kafka's own, so Kafka's tools read our offsets
// topic): an offset commit is keyed by OffsetCommitKey version 1 (group,
// topic, partition) with an OffsetCommitValue version 3 (offset, leader
// epoch, metadata, commit timestamp); a null value deletes the offset.
// Keys of version 2 (group metadata) are Kafka's and are skipped on load:
// membership is not persisted, members rejoin after a coordinator move.
const (
	offsetKeyVersion   = 1
	offsetValueVersion = 3
	groupKeyVersion    = 2
)

// committed is one stored offset.
type committed struct {
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	// CommitTime is the coordinator's clock at commit, in milliseconds.
	CommitTime int64
	// pos orders the appends to the offsets partition that wrote it (not
	// encoded): a transaction's offset materializes at its COMMIT marker
	// only over an offset appended before it, as Kafka compares the
	// records' log offsets (see offsetsPartition.appends).
	pos int64
}

func offsetKey(group, topic string, partition int32) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = offsetKeyVersion, group, topic, partition
	return k.AppendTo(nil)
}

func offsetRecord(group, topic string, partition int32, c committed) Record {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = c.Offset, c.LeaderEpoch, c.Metadata, c.CommitTime
	return Record{Key: offsetKey(group, topic, partition), Value: v.AppendTo(nil)}
}

func offsetTombstone(group, topic string, partition int32) Record {
	return Record{Key: offsetKey(group, topic, partition)}
}

// consumerRecordType reports a key of a consumer-protocol group record
// (types 3 to 8, and 16).
func consumerRecordType(key []byte) (int16, bool) {
	rd := kbin.Reader{Src: key}
	typ := rd.Int16()
	return typ, rd.Ok() && (typ >= cgMetadataType && typ <= cgCurrentAssignmentTyp || typ == cgRegexType)
}

// decoded is a record of the offsets topic as load applies it.
type decoded struct {
	isOffset  bool
	group     string
	topic     string
	partition int32
	// value is nil for a tombstone.
	value *committed
}

// decodeRecord parses a record of the offsets topic. Group metadata
// records (key version 2) decode with isOffset false.
func decodeRecord(r Record) (decoded, error) {
	rd := kbin.Reader{Src: r.Key}
	ver := rd.Int16()
	if !rd.Ok() {
		return decoded{}, fmt.Errorf("%w: short key", ErrCorruptRecord)
	}
	switch ver {
	case 0, 1:
	case groupKeyVersion:
		return decoded{}, nil
	default:
		return decoded{}, fmt.Errorf("%w: key version %d", ErrCorruptRecord, ver)
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(r.Key); err != nil {
		return decoded{}, fmt.Errorf("%w: key: %v", ErrCorruptRecord, err)
	}
	d := decoded{isOffset: true, group: k.Group, topic: k.Topic, partition: k.Partition}
	if r.Value == nil {
		return d, nil
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(r.Value); err != nil {
		return decoded{}, fmt.Errorf("%w: value: %v", ErrCorruptRecord, err)
	}
	epoch := v.LeaderEpoch
	if v.Version < 3 {
		epoch = -1
	}
	d.value = &committed{Offset: v.Offset, LeaderEpoch: epoch, Metadata: v.Metadata, CommitTime: v.CommitTimestamp}
	return d, nil
}
