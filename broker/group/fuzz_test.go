package group

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzDecodeRecord: any bytes in the offsets topic decode or fail with
// ErrCorruptRecord, never panic; what decodes re-encodes to the same key.
func FuzzDecodeRecord(f *testing.F) {
	r := offsetRecord("g", "t", 1, committed{Offset: 5, LeaderEpoch: 2, Metadata: "m", CommitTime: 9})
	f.Add(r.Key, r.Value)
	f.Add(r.Key, []byte(nil))
	f.Add([]byte{0, 2, 0, 1, 'g'}, []byte{1, 2, 3})
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		d, err := decodeRecord(Record{Key: key, Value: value})
		if err != nil {
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("error %v is not ErrCorruptRecord", err)
			}
			return
		}
		if d.isOffset && key[1] == offsetKeyVersion {
			if got := offsetKey(d.group, d.topic, d.partition); string(got) != string(key[:len(got)]) {
				t.Fatalf("key %v re-encodes to %v", key, got)
			}
		}
	})
}

// FuzzConsumerGroupRecords: any bytes under a consumer-group record key
// replay or fail with ErrCorruptRecord, never panic; the records written
// replay to the member they came from.
func FuzzConsumerGroupRecords(f *testing.F) {
	m := newCMember("m1")
	m.instanceID, m.clientID, m.clientHost, m.topics = kmsg.StringPtr("i"), "c", "/h", []string{"a", "b"}
	m.rebalanceTimeout, m.epoch, m.prevEpoch, m.state = 3*time.Second, 4, 3, memberUnrevoked
	m.assigned, m.revoking = assignment{topicA: {0, 2}}, assignment{topicB: {1}}
	for _, r := range []Record{cgMetadataRecord("g", 4, 77), cgMemberRecord("g", m), cgTargetMetadataRecord("g", 4),
		cgTargetMemberRecord("g", "m1", assignment{topicA: {0, 1, 2}}), cgCurrentRecord("g", m)} {
		f.Add(r.Key, r.Value)
		f.Add(r.Key, r.Value[:len(r.Value)/2])
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		typ, ok := consumerRecordType(key)
		if !ok {
			return
		}
		if err := (cgReplay{}).apply(typ, Record{Key: key, Value: value}); err != nil && !errors.Is(err, ErrCorruptRecord) {
			t.Fatalf("error %v is not ErrCorruptRecord", err)
		}
	})
}

// TestConsumerGroupRecordsRoundTrip: a member's records replay to the
// same member.
func TestConsumerGroupRecordsRoundTrip(t *testing.T) {
	m := newCMember("m1")
	m.instanceID, m.clientID, m.clientHost, m.topics, m.regex = kmsg.StringPtr("i"), "c", "/h", []string{"a", "b"}, kmsg.StringPtr("x.*")
	m.assignor, m.rebalanceTimeout, m.epoch, m.prevEpoch, m.state = "range", 3*time.Second, 4, 3, memberUnrevoked
	m.assigned, m.revoking = assignment{topicA: {0, 2}}, assignment{topicB: {1}}
	rep := cgReplay{}
	for _, r := range []Record{cgMetadataRecord("g", 4, 77), cgMemberRecord("g", m), cgTargetMetadataRecord("g", 5),
		cgTargetMemberRecord("g", "m1", assignment{topicA: {0, 1, 2}}), cgCurrentRecord("g", m)} {
		typ, _ := consumerRecordType(r.Key)
		if err := rep.apply(typ, r); err != nil {
			t.Fatal(err)
		}
	}
	g := rep["g"]
	got := g.members["m1"]
	if !g.exists || g.epoch != 4 || g.hash != 77 || g.assignmentEpoch != 5 || fmt.Sprint(g.targets["m1"]) != fmt.Sprint(assignment{topicA: {0, 1, 2}}) ||
		*got.instanceID != "i" || got.clientID != "c" || got.clientHost != "/h" || fmt.Sprint(got.topics) != "[a b]" || *got.regex != "x.*" ||
		got.assignor != "range" || got.rebalanceTimeout != 3*time.Second || got.epoch != 4 || got.prevEpoch != 3 || got.state != memberUnrevoked ||
		!got.assigned.equal(m.assigned) || !got.revoking.equal(m.revoking) {
		t.Fatalf("replayed %+v, member %+v", g, got)
	}
}
