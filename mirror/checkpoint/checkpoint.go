package checkpoint

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// ErrMalformed: a record is not a version 0 checkpoint.
var ErrMalformed = errors.New("checkpoint: malformed checkpoint record")

// Checkpoint is one group's translated offset of one target partition.
type Checkpoint struct {
	Group string
	// Topic and Partition are the target's (the remote topic).
	Topic     string
	Partition int32
	// Upstream is the committed offset on the source, Downstream its
	// translation on the target.
	Upstream   int64
	Downstream int64
	Metadata   string
}

// Key encodes the record key.
func (c Checkpoint) Key() []byte {
	b := kbin.AppendString(nil, c.Group)
	b = kbin.AppendString(b, c.Topic)
	return kbin.AppendInt32(b, (c.Partition))
}

// Value encodes the record value.
func (c Checkpoint) Value() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt64(b, (c.Upstream))
	b = kbin.AppendInt64(b, (c.Downstream))
	return kbin.AppendString(b, c.Metadata)
}

// Parse decodes a record.
func Parse(key, value []byte) (Checkpoint, error) {
	var c Checkpoint
	k, v := kbin.Reader{Src: key}, kbin.Reader{Src: value}
	c.Group, c.Topic = k.String(), k.String()
	c.Partition = k.Int32()
	if v.Int16() != 0 {
		return c, fmt.Errorf("%w: unknown version", ErrMalformed)
	}
	c.Upstream, c.Downstream = v.Int64(), v.Int64()
	c.Metadata = v.String()
	if !k.Ok() || !v.Ok() || len(k.Src) != 0 || len(v.Src) != 0 {
		return c, fmt.Errorf("%w: key %x value %x", ErrMalformed, key, value)
	}
	return c, nil
}
