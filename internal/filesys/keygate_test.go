package filesys

import "testing"

// TestStartsBlock: with data transfer protection, the writes that may dial
// a datanode (and so race in colinmarc/hdfs's key fetch) are exactly the
// first one and those reaching a block boundary.
func TestStartsBlock(t *testing.T) {
	w := &hdfsWriter{gate: &keyGate{on: true, blockSize: 100}}
	for _, tc := range []struct {
		written int64
		n       int
		want    bool
	}{
		{0, 10, true},    // the first block
		{10, 10, false},  // inside the block
		{10, 89, false},  // ends one short of the boundary
		{10, 90, true},   // fills the block: colinmarc starts the next
		{99, 5, true},    // crosses it
		{100, 1, true},   // the first byte of the next block
		{150, 300, true}, // spans several
		{150, 0, false},
	} {
		w.written = tc.written
		if got := w.startsBlock(tc.n); got != tc.want {
			t.Errorf("written %d, write %d: startsBlock %v, want %v", tc.written, tc.n, got, tc.want)
		}
	}
	w.gate.blockSize = 0 // unknown: every write may dial
	w.written = 150
	if !w.startsBlock(1) {
		t.Error("unknown block size: a write is not gated")
	}
}
