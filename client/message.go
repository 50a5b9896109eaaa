package client

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Header is one record header. Keys may repeat.
type Header struct {
	Key   string
	Value []byte
}

// Message is one record, as produced or as consumed.
//
// On Send, Topic, Key, Value, Headers and (optionally) Timestamp are the
// caller's; Partition is read only by ManualPartitioner. After a successful
// Send, Partition, Offset and Timestamp hold what the broker assigned.
// franz-go counts delivery.timeout.ms from a given Timestamp, so a message
// stamped further back than that fails at once; leave it zero for "now".
type Message struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
	Timestamp time.Time
}

// toRecord builds the kgo record for m. The partitioner reads the record,
// so everything it may look at is copied across.
func (m *Message) toRecord() *kgo.Record {
	r := &kgo.Record{
		Topic:     m.Topic,
		Partition: m.Partition,
		Key:       m.Key,
		Value:     m.Value,
		Timestamp: m.Timestamp,
	}
	if len(m.Headers) > 0 {
		r.Headers = make([]kgo.RecordHeader, len(m.Headers))
		for i, h := range m.Headers {
			r.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
		}
	}
	return r
}

// fillFromRecord copies what the broker assigned back into m.
func (m *Message) fillFromRecord(r *kgo.Record) {
	m.Partition = r.Partition
	m.Offset = r.Offset
	m.Timestamp = r.Timestamp
}

// messageFromRecord converts into dst, which is returned.
func messageFromRecord(dst *Message, r *kgo.Record) *Message {
	dst.Topic = r.Topic
	dst.Partition = r.Partition
	dst.Offset = r.Offset
	dst.Key = r.Key
	dst.Value = r.Value
	dst.Timestamp = r.Timestamp
	if len(r.Headers) > 0 {
		dst.Headers = make([]Header, len(r.Headers))
		for i, h := range r.Headers {
			dst.Headers[i] = Header{Key: h.Key, Value: h.Value}
		}
	}
	return dst
}
