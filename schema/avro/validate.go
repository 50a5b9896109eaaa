package avro

import (
	"errors"
	"fmt"
)

// ErrMalformed: bytes that are not one datum of the schema in Avro binary.
var ErrMalformed = errors.New("avro: malformed binary data")

const (
	// maxDepth bounds nesting, so that a hostile recursive datum cannot
	// exhaust the stack of the validator or of goavro after it.
	maxDepth = 1000
	// maxZeroSizeItems bounds the block count of arrays and maps whose items
	// encode in zero bytes (null, empty records): nothing else limits them.
	maxZeroSizeItems = 1 << 16
)

// Validate checks that buf is exactly one datum of the schema in Avro
// binary, without building values. goavro trusts block counts when it
// allocates (a 6-byte input can ask it for gigabytes) and recurses as deep
// as the data goes, so a decoder of untrusted bytes calls Validate first.
// Validate allocates only for schemas with arrays or maps.
func (s *Schema) Validate(buf []byte) error {
	var v validator
	rest, err := v.skip(s.Root, buf, 0)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(rest))
	}
	return nil
}

// stringType is the type of map keys. Never modified.
var stringType = &Type{Kind: String}

type validator struct {
	minSizes map[*Type]int
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// varint reads a zig-zag varint of at most maxBytes bytes.
func varint(buf []byte, maxBytes int) (int64, []byte, error) {
	var u uint64
	for i := 0; i < len(buf) && i < maxBytes; i++ {
		b := buf[i]
		u |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return int64(u>>1) ^ -int64(u&1), buf[i+1:], nil
		}
	}
	if len(buf) < maxBytes {
		return 0, nil, malformed("truncated varint")
	}
	return 0, nil, malformed("varint longer than %d bytes", maxBytes)
}

func need(buf []byte, n int64) ([]byte, error) {
	if n < 0 || int64(len(buf)) < n {
		return nil, malformed("need %d bytes, have %d", n, len(buf))
	}
	return buf[n:], nil
}

func (v *validator) skip(t *Type, buf []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, malformed("nesting deeper than %d", maxDepth)
	}
	switch t.Kind {
	case Null:
		return buf, nil
	case Boolean:
		if len(buf) < 1 || buf[0] > 1 {
			return nil, malformed("bad boolean")
		}
		return buf[1:], nil
	case Int:
		_, rest, err := varint(buf, 5)
		return rest, err
	case Long:
		_, rest, err := varint(buf, 10)
		return rest, err
	case Float:
		return need(buf, 4)
	case Double:
		return need(buf, 8)
	case Bytes, String:
		n, rest, err := varint(buf, 10)
		if err != nil {
			return nil, err
		}
		return need(rest, n)
	case Fixed:
		return need(buf, int64(t.Size))
	case Enum:
		i, rest, err := varint(buf, 5)
		if err != nil {
			return nil, err
		}
		if i < 0 || i >= int64(len(t.Symbols)) {
			return nil, malformed("enum %s index %d out of range", t.Name, i)
		}
		return rest, nil
	case Union:
		i, rest, err := varint(buf, 10)
		if err != nil {
			return nil, err
		}
		if i < 0 || i >= int64(len(t.Branches)) {
			return nil, malformed("union index %d out of range", i)
		}
		return v.skip(t.Branches[i], rest, depth+1)
	case Record:
		var err error
		for _, f := range t.Fields {
			if buf, err = v.skip(f.Type, buf, depth+1); err != nil {
				return nil, err
			}
		}
		return buf, nil
	case Array, Map:
		item := t.Items
		if t.Kind == Map {
			item = t.Values
		}
		size := v.minSize(item)
		if t.Kind == Map {
			size++ // the key's length
		}
		for {
			count, rest, err := varint(buf, 10)
			if err != nil {
				return nil, err
			}
			buf = rest
			if count == 0 {
				return buf, nil
			}
			if count < 0 {
				if count == -1<<63 {
					return nil, malformed("block count overflows")
				}
				count = -count
				if _, buf, err = varint(buf, 10); err != nil { // block size in bytes
					return nil, err
				}
			}
			if (size > 0 && count > int64(len(buf))/int64(size)) || (size == 0 && count > maxZeroSizeItems) {
				return nil, malformed("block of %d items cannot fit in %d bytes", count, len(buf))
			}
			for range count {
				if t.Kind == Map {
					if buf, err = v.skip(stringType, buf, depth+1); err != nil {
						return nil, err
					}
				}
				if buf, err = v.skip(item, buf, depth+1); err != nil {
					return nil, err
				}
			}
		}
	}
	return nil, malformed("unknown type %s", t.Kind)
}

// minSize is the fewest bytes a value of t encodes to.
func (v *validator) minSize(t *Type) int {
	if v.minSizes == nil {
		v.minSizes = map[*Type]int{}
	}
	if n, ok := v.minSizes[t]; ok {
		return n
	}
	v.minSizes[t] = 0 // a recursive reference adds nothing more
	n := 0
	switch t.Kind {
	case Boolean, Int, Long, Bytes, String, Enum, Union, Array, Map:
		n = 1
	case Float:
		n = 4
	case Double:
		n = 8
	case Fixed:
		n = t.Size
	case Record:
		for _, f := range t.Fields {
			n += v.minSize(f.Type)
		}
	}
	v.minSizes[t] = n
	return n
}
