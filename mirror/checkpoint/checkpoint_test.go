package checkpoint

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// TestWireFormat: the bytes Checkpoint.java's KEY_SCHEMA and
// HEADER_SCHEMA + VALUE_SCHEMA_V0 write for the same fields.
func TestWireFormat(t *testing.T) {
	c := Checkpoint{Group: "g", Topic: "dc1.t", Partition: 2, Upstream: 10, Downstream: 7, Metadata: ""}
	key, _ := hex.DecodeString("0001" + "67" + "0005" + "6463312e74" + "00000002")
	value, _ := hex.DecodeString("0000" + "000000000000000a" + "0000000000000007" + "0000")
	if !bytes.Equal(c.Key(), key) || !bytes.Equal(c.Value(), value) {
		t.Fatalf("key %x value %x, want %x %x", c.Key(), c.Value(), key, value)
	}
	got, err := Parse(key, value)
	if err != nil || got != c {
		t.Fatalf("Parse = %+v, %v", got, err)
	}
	if _, err := Parse(key, value[:10]); err == nil {
		t.Error("a short value parsed")
	}
}

func FuzzParse(f *testing.F) {
	c := Checkpoint{Group: "g", Topic: "t", Partition: 1, Upstream: 2, Downstream: 3, Metadata: "m"}
	f.Add(c.Key(), c.Value())
	f.Fuzz(func(t *testing.T, key, value []byte) {
		got, err := Parse(key, value)
		if err != nil {
			return
		}
		if again, err := Parse(got.Key(), got.Value()); err != nil || again != got {
			t.Fatalf("re-encoded %+v parses as %+v, %v", got, again, err)
		}
	})
}
