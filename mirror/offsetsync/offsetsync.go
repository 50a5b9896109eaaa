package offsetsync

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// ErrMalformed: a record is not an offset sync of a known version.
var ErrMalformed = errors.New("offsetsync: malformed offset sync")

// Sync is one run (see the package doc).
type Sync struct {
	Source       string
	Topic        string
	Partition    int32
	SourceOffset int64
	TargetTopic  string
	TargetOffset int64
	Count        int64
}

// Key encodes the record key of s.
func (s Sync) Key() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendString(b, s.Source)
	b = kbin.AppendString(b, s.Topic)
	b = kbin.AppendInt32(b, (s.Partition))
	return kbin.AppendInt64(b, (s.SourceOffset))
}

// Value encodes the record value of s.
func (s Sync) Value() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendString(b, s.TargetTopic)
	b = kbin.AppendInt64(b, (s.TargetOffset))
	return kbin.AppendInt64(b, (s.Count))
}

// Parse decodes a record.
func Parse(key, value []byte) (Sync, error) {
	var s Sync
	k, v := kbin.Reader{Src: key}, kbin.Reader{Src: value}
	if k.Int16() != 0 || v.Int16() != 0 {
		return s, fmt.Errorf("%w: unknown version", ErrMalformed)
	}
	s.Source, s.Topic = k.String(), k.String()
	s.Partition = k.Int32()
	s.SourceOffset = k.Int64()
	s.TargetTopic = v.String()
	s.TargetOffset, s.Count = v.Int64(), v.Int64()
	if !k.Ok() || !v.Ok() || len(k.Src) != 0 || len(v.Src) != 0 || s.Count < 1 || s.SourceOffset < 0 || s.TargetOffset < 0 {
		return s, fmt.Errorf("%w: key %x value %x", ErrMalformed, key, value)
	}
	return s, nil
}

type partKey struct {
	source, topic string
	partition     int32
}

// Store holds the runs read so far and translates with them.
type Store struct {
	parts map[partKey]map[int64]Sync // by SourceOffset: a later run under one key replaces the earlier
}

// NewStore returns an empty Store.
func NewStore() *Store { return &Store{parts: map[partKey]map[int64]Sync{}} }

// Add records a run, replacing the one with the same key.
func (st *Store) Add(s Sync) {
	k := partKey{s.Source, s.Topic, s.Partition}
	if st.parts[k] == nil {
		st.parts[k] = map[int64]Sync{}
	}
	st.parts[k][s.SourceOffset] = s
}

// Partitions lists the partitions of source's topic with runs.
func (st *Store) Partitions(source, topic string) []int32 {
	var out []int32
	for k := range st.parts {
		if k.source == source && k.topic == topic {
			out = append(out, k.partition)
		}
	}
	slices.Sort(out)
	return out
}

// Translate returns the target topic and offset of the first target
// record whose source offset is at or past committed (see the package
// doc); ok is false when nothing known says.
func (st *Store) Translate(source, topic string, partition int32, committed int64) (targetTopic string, offset int64, ok bool) {
	runs := st.parts[partKey{source, topic, partition}]
	var cover, next, last *Sync
	for _, r := range runs {
		switch {
		case r.SourceOffset <= committed && committed < r.SourceOffset+r.Count:
			if cover == nil || r.TargetOffset > cover.TargetOffset {
				cover = &r
			}
		case r.SourceOffset > committed:
			if next == nil || r.SourceOffset < next.SourceOffset ||
				(r.SourceOffset == next.SourceOffset && r.TargetOffset > next.TargetOffset) {
				next = &r
			}
		}
		end := r.SourceOffset + r.Count
		if last == nil || end > last.SourceOffset+last.Count ||
			(end == last.SourceOffset+last.Count && r.TargetOffset > last.TargetOffset) {
			last = &r
		}
	}
	switch {
	case cover != nil:
		return cover.TargetTopic, cover.TargetOffset + committed - cover.SourceOffset, true
	case next != nil:
		return next.TargetTopic, next.TargetOffset, true
	case last != nil && committed == last.SourceOffset+last.Count:
		return last.TargetTopic, last.TargetOffset + last.Count, true
	}
	return "", 0, false
}
