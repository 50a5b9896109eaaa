package schema

import (
	"bytes"
	"errors"
	"testing"
)

func TestFrameParseRoundTrip(t *testing.T) {
	for _, id := range []ID{1, 2, 255, 256, 65536, 1<<31 - 1} {
		payload := []byte{0x02, 0x61, byte(id)}
		framed, err := Frame(id, payload)
		if err != nil {
			t.Fatalf("Frame(%d): %v", id, err)
		}
		if framed[0] != MagicByte || len(framed) != HeaderSize+len(payload) {
			t.Fatalf("Frame(%d) = % x", id, framed)
		}
		gotID, gotPayload, err := Parse(framed)
		if err != nil {
			t.Fatalf("Parse(% x): %v", framed, err)
		}
		if gotID != id || !bytes.Equal(gotPayload, payload) {
			t.Fatalf("Parse = %d, % x; want %d, % x", gotID, gotPayload, id, payload)
		}
	}
}

func TestFrameIsConfluentLayout(t *testing.T) {
	framed, err := Frame(0x01020304, []byte("avro"))
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0, 1, 2, 3, 4, 'a', 'v', 'r', 'o'}
	if !bytes.Equal(framed, want) {
		t.Fatalf("Frame = % x, want % x", framed, want)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrShortFrame},
		{"four bytes", []byte{0, 0, 0, 1}, ErrShortFrame},
		{"magic 1", []byte{1, 0, 0, 0, 1}, ErrBadMagic},
		{"json text", []byte(`{"a":1}`), ErrBadMagic},
		{"id zero", []byte{0, 0, 0, 0, 0}, ErrBadID},
		{"id negative in java", []byte{0, 0x80, 0, 0, 0}, ErrBadID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Parse(% x) error = %v, want %v", tc.in, err, tc.want)
			}
		})
	}
	if _, err := Frame(0, nil); !errors.Is(err, ErrBadID) {
		t.Fatalf("Frame(0) error = %v, want ErrBadID", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 2})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, payload, err := Parse(b)
		if err != nil {
			return
		}
		again, err := Frame(id, payload)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("Frame(Parse(% x)) = % x, %v", b, again, err)
		}
	})
}
