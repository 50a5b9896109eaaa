package group

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Consumer-protocol group records (frozen: Kafka's group coordinator
// record types, so a Kafka broker reading our offsets topic finds the same
// group). A key is the record type as an int16 followed by the key fields
// (non-flexible strings); a value is the int16 value version 0 followed by
// the fields in Kafka's flexible encoding (compact strings and arrays,
// tagged fields). Kafka's ConsumerGroupPartitionMetadata (type 4) is not
// written, as Kafka >= 4.1 no longer writes it: the subscribed topics'
// metadata is summarized by the MetadataHash tag of the group record (our
// hash, FNV-1a over topic names, ids and partition counts; Kafka's is
// murmur3 over more fields, so a Kafka broker loading our records
// recomputes the target assignment once).
const (
	cgMetadataType         = 3 // ConsumerGroupMetadataKey{GroupId} -> {Epoch, tag 0 MetadataHash}
	cgPartitionMetaType    = 4 // ConsumerGroupPartitionMetadataKey, skipped on load
	cgMemberMetadataType   = 5 // ConsumerGroupMemberMetadataKey{GroupId, MemberId}
	cgTargetMetadataType   = 6 // ConsumerGroupTargetAssignmentMetadataKey{GroupId} -> {AssignmentEpoch}
	cgTargetMemberType     = 7 // ConsumerGroupTargetAssignmentMemberKey{GroupId, MemberId}
	cgCurrentAssignmentTyp = 8 // ConsumerGroupCurrentMemberAssignmentKey{GroupId, MemberId}
	cgRegexType            = 16
)

func cgKey(typ int16, group string, member *string) []byte {
	k := kbin.AppendInt16(nil, typ)
	k = kbin.AppendString(k, group)
	if member != nil {
		k = kbin.AppendString(k, *member)
	}
	return k
}

func cgValueStart() []byte { return kbin.AppendInt16(nil, 0) }

// appendNoTags ends a flexible struct with no tagged fields.
func appendNoTags(dst []byte) []byte { return kbin.AppendUvarint(dst, 0) }

func appendAssignment(dst []byte, a assignment) []byte {
	ids := a.topicIDs()
	dst = kbin.AppendCompactArrayLen(dst, len(ids))
	for _, id := range ids {
		dst = kbin.AppendUuid(dst, id)
		dst = kbin.AppendCompactArrayLen(dst, len(a[id]))
		for _, p := range a[id] {
			dst = kbin.AppendInt32(dst, p)
		}
		dst = appendNoTags(dst)
	}
	return dst
}

func readAssignment(r *kbin.Reader) assignment {
	a := assignment{}
	n := r.CompactArrayLen()
	for i := int32(0); i < n && r.Ok(); i++ {
		id := r.Uuid()
		np := r.CompactArrayLen()
		ps := make([]int32, 0, min(max(np, 0), int32(len(r.Src)/4)))
		for j := int32(0); j < np && r.Ok(); j++ {
			ps = append(ps, r.Int32())
		}
		skipTags(r)
		if r.Ok() && len(ps) > 0 {
			slices.Sort(ps)
			a[id] = ps
		}
	}
	return a
}

// skipTags reads past a flexible struct's tagged fields.
func skipTags(r *kbin.Reader) {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

func cgMetadataRecord(group string, epoch int32, hash uint64) Record {
	v := cgValueStart()
	v = kbin.AppendInt32(v, epoch)
	v = kbin.AppendUvarint(v, 1) // one tag: MetadataHash
	v = kbin.AppendUvarint(v, 0)
	v = kbin.AppendUvarint(v, 8)
	v = kbin.AppendInt64(v, int64(hash))
	return Record{Key: cgKey(cgMetadataType, group, nil), Value: v}
}

func cgMemberRecord(group string, m *cmember) Record {
	v := cgValueStart()
	v = kbin.AppendCompactNullableString(v, m.instanceID)
	v = kbin.AppendCompactNullableString(v, m.rackID)
	v = kbin.AppendCompactString(v, m.clientID)
	v = kbin.AppendCompactString(v, m.clientHost)
	v = kbin.AppendCompactArrayLen(v, len(m.topics))
	for _, t := range m.topics {
		v = kbin.AppendCompactString(v, t)
	}
	v = kbin.AppendCompactNullableString(v, m.regex)
	v = kbin.AppendInt32(v, int32(m.rebalanceTimeout/time.Millisecond))
	var assignor *string
	if m.assignor != "" {
		assignor = &m.assignor
	}
	v = kbin.AppendCompactNullableString(v, assignor)
	v = appendNoTags(v)
	return Record{Key: cgKey(cgMemberMetadataType, group, &m.id), Value: v}
}

func cgTargetMetadataRecord(group string, epoch int32) Record {
	v := cgValueStart()
	v = kbin.AppendInt32(v, epoch)
	v = appendNoTags(v)
	return Record{Key: cgKey(cgTargetMetadataType, group, nil), Value: v}
}

func cgTargetMemberRecord(group, member string, a assignment) Record {
	v := appendAssignment(cgValueStart(), a)
	v = appendNoTags(v)
	return Record{Key: cgKey(cgTargetMemberType, group, &member), Value: v}
}

func cgCurrentRecord(group string, m *cmember) Record {
	v := cgValueStart()
	v = kbin.AppendInt32(v, m.epoch)
	v = kbin.AppendInt32(v, m.prevEpoch)
	v = kbin.AppendInt8(v, int8(m.state))
	v = appendAssignment(v, m.assigned)
	v = appendAssignment(v, m.revoking)
	v = appendNoTags(v)
	return Record{Key: cgKey(cgCurrentAssignmentTyp, group, &m.id), Value: v}
}

// cgMemberTombstones delete a member's three records.
func cgMemberTombstones(group, member string) []Record {
	return []Record{
		{Key: cgKey(cgCurrentAssignmentTyp, group, &member)},
		{Key: cgKey(cgTargetMemberType, group, &member)},
		{Key: cgKey(cgMemberMetadataType, group, &member)},
	}
}

// cgGroupTombstones delete an empty group's own records.
func cgGroupTombstones(group string) []Record {
	return []Record{
		{Key: cgKey(cgTargetMetadataType, group, nil)},
		{Key: cgKey(cgMetadataType, group, nil)},
	}
}

// cgReplay accumulates the consumer groups' records of a partition in log
// order, as load reads them.
type cgReplay map[string]*cgLoaded

type cgLoaded struct {
	exists          bool
	epoch           int32
	hash            uint64
	assignmentEpoch int32
	members         map[string]*cmember
	targets         map[string]assignment
}

func (r cgReplay) group(id string) *cgLoaded {
	g := r[id]
	if g == nil {
		g = &cgLoaded{members: map[string]*cmember{}, targets: map[string]assignment{}}
		r[id] = g
	}
	return g
}

func (g *cgLoaded) member(id string) *cmember {
	m := g.members[id]
	if m == nil {
		m = newCMember(id)
		g.members[id] = m
	}
	return m
}

// apply replays one record whose key type is typ (3 to 8 or 16); a
// malformed one returns an error wrapping ErrCorruptRecord.
func (r cgReplay) apply(typ int16, rec Record) error {
	kr := kbin.Reader{Src: rec.Key}
	kr.Int16()
	groupID := kr.String()
	var memberID string
	switch typ {
	case cgMemberMetadataType, cgTargetMemberType, cgCurrentAssignmentTyp, cgRegexType:
		memberID = kr.String()
	}
	if !kr.Ok() {
		return fmt.Errorf("%w: consumer group key type %d", ErrCorruptRecord, typ)
	}
	if typ == cgPartitionMetaType || typ == cgRegexType {
		return nil
	}
	g := r.group(groupID)
	if rec.Value == nil {
		switch typ {
		case cgMetadataType:
			delete(r, groupID)
		case cgMemberMetadataType, cgCurrentAssignmentTyp:
			delete(g.members, memberID)
		case cgTargetMemberType:
			delete(g.targets, memberID)
		}
		return nil
	}
	vr := kbin.Reader{Src: rec.Value}
	vr.Int16()
	switch typ {
	case cgMetadataType:
		g.exists = true
		g.epoch = vr.Int32()
		n := vr.Uvarint()
		for i := uint32(0); i < n && vr.Ok(); i++ {
			tag, size := vr.Uvarint(), vr.Uvarint()
			if tag == 0 && size == 8 {
				g.hash = uint64(vr.Int64())
			} else {
				vr.Span(int(size))
			}
		}
	case cgMemberMetadataType:
		m := g.member(memberID)
		m.instanceID = vr.CompactNullableString()
		m.rackID = vr.CompactNullableString()
		m.clientID = vr.CompactString()
		m.clientHost = vr.CompactString()
		n := vr.CompactArrayLen()
		m.topics = nil
		for i := int32(0); i < n && vr.Ok(); i++ {
			m.topics = append(m.topics, vr.CompactString())
		}
		m.regex = vr.CompactNullableString()
		m.rebalanceTimeout = time.Duration(vr.Int32()) * time.Millisecond
		if a := vr.CompactNullableString(); a != nil {
			m.assignor = *a
		}
		m.hasMetadata = true
	case cgTargetMetadataType:
		g.assignmentEpoch = vr.Int32()
	case cgTargetMemberType:
		g.targets[memberID] = readAssignment(&vr)
	case cgCurrentAssignmentTyp:
		m := g.member(memberID)
		m.epoch = vr.Int32()
		m.prevEpoch = vr.Int32()
		m.state = cmemberState(vr.Int8())
		m.assigned = readAssignment(&vr)
		m.revoking = readAssignment(&vr)
	}
	if !vr.Ok() {
		return fmt.Errorf("%w: consumer group value type %d", ErrCorruptRecord, typ)
	}
	return nil
}
