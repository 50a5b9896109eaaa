package client

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// javaVectors were computed with the Java client itself:
// org.apache.kafka.common.utils.Utils.murmur2 and toPositive from
// kafka-clients 3.9.1, over each key's UTF-8 bytes, run with OpenJDK 17.
// Columns: key, murmur2, partition of 3, of 12, of 100.
var javaVectors = []struct {
	key           string
	hash          int32
	p3, p12, p100 int
}{
	{"", 275646681, 0, 9, 81},
	{"a", -1563381124, 1, 4, 24},
	{"ab", 316155434, 2, 2, 34},
	{"abc", 479470107, 0, 3, 7},
	{"abcd", -1323649548, 2, 8, 0},
	{"abcde", 461995741, 1, 1, 41},
	{"hello", 2132663229, 0, 9, 29},
	{"kafka", -798503068, 1, 4, 80},
	{"tributary", 77843494, 1, 10, 94},
	{"key-0", 29210041, 1, 1, 41},
	{"key-1", 193331640, 0, 0, 40},
	{"key-42", -187086521, 0, 3, 27},
	{"user-12345", -243491053, 1, 7, 95},
	{"The quick brown fox jumps over the lazy dog", 495243318, 0, 6, 18},
	{"21", -973932308, 0, 0, 40},
	{"foobar", -790332482, 0, 6, 66},
	{"\u00fcmlaut", -104298453, 2, 11, 95},
	{"\u65e5\u672c", -700811021, 0, 3, 27},
}

func TestMurmur2MatchesJavaClient(t *testing.T) {
	for _, v := range javaVectors {
		if got := Murmur2([]byte(v.key)); got != v.hash {
			t.Errorf("Murmur2(%q) = %d, Java %d", v.key, got, v.hash)
		}
		for _, c := range []struct{ n, want int }{{3, v.p3}, {12, v.p12}, {100, v.p100}} {
			if got := KeyPartition([]byte(v.key), c.n); got != c.want {
				t.Errorf("KeyPartition(%q, %d) = %d, Java %d", v.key, c.n, got, c.want)
			}
			m := &Message{Key: []byte(v.key)}
			if got := HashPartitioner().Partition(m, c.n); got != c.want {
				t.Errorf("HashPartitioner(%q, %d) = %d, Java %d", v.key, c.n, got, c.want)
			}
		}
	}
	// Bytes >= 0x80 are sign-extended in Java; the tail mixing must agree.
	if got := Murmur2([]byte{0xff, 0x00, 0x80, 0x7f, 0x01}); got != -315781896 {
		t.Errorf("Murmur2(ff 00 80 7f 01) = %d, Java -315781896", got)
	}
}

func TestPartitionersWithoutKey(t *testing.T) {
	rr := RoundRobinPartitioner()
	for i := range 10 {
		if got := rr.Partition(&Message{}, 4); got != i%4 {
			t.Fatalf("round-robin #%d = %d", i, got)
		}
	}
	h := HashPartitioner()
	seen := map[int]bool{}
	for range 6 {
		seen[h.Partition(&Message{}, 3)] = true
	}
	if len(seen) != 3 {
		t.Fatalf("hash partitioner without keys used %v, want all of 3", seen)
	}
	counts := map[int]int{}
	r := RandomPartitioner()
	for range 3000 {
		p := r.Partition(&Message{Key: []byte("same")}, 3)
		if p < 0 || p >= 3 {
			t.Fatalf("random partition %d", p)
		}
		counts[p]++
	}
	for p, c := range counts {
		if c < 800 {
			t.Fatalf("random partitioner: partition %d got %d of 3000", p, c)
		}
	}
	if got := ManualPartitioner().Partition(&Message{Partition: 2}, 3); got != 2 {
		t.Fatalf("manual = %d", got)
	}
}

func TestRangeAssign(t *testing.T) {
	got := RangeAssign([]int32{2, 0, 1}, []string{"c2", "c1"})
	want := map[string][]int32{"c1": {0, 1}, "c2": {2}}
	if !maps.EqualFunc(got, want, slices.Equal[[]int32]) {
		t.Fatalf("3 over 2: %v, want %v", got, want)
	}
	if got := RangeAssign([]int32{0, 1, 2}, []string{"c1", "c2", "c3", "c4"}); len(got) != 3 || got["c4"] != nil {
		t.Fatalf("3 over 4: %v", got)
	}
	// Every partition owned exactly once; sizes differ by at most one, the
	// bigger ones first.
	for np := range 20 {
		for nc := 1; nc <= 7; nc++ {
			var ps []int32
			for p := range np {
				ps = append(ps, int32(p))
			}
			var cs []string
			for c := range nc {
				cs = append(cs, fmt.Sprintf("c%02d", c))
			}
			a := RangeAssign(ps, cs)
			var all []int32
			for i, c := range cs {
				want := np / nc
				if i < np%nc {
					want++
				}
				if len(a[c]) != want {
					t.Fatalf("%d over %d: %s has %v, want %d", np, nc, c, a[c], want)
				}
				all = append(all, a[c]...)
			}
			if !slices.Equal(all, ps) {
				t.Fatalf("%d over %d: ranges %v do not cover %v in order", np, nc, all, ps)
			}
		}
	}
}

func FuzzMurmur2Partition(f *testing.F) {
	f.Add([]byte("key"), 3)
	f.Fuzz(func(t *testing.T, key []byte, n int) {
		if n <= 0 || n > 1<<20 {
			return
		}
		if p := KeyPartition(key, n); p < 0 || p >= n {
			t.Fatalf("KeyPartition(%x, %d) = %d", key, n, p)
		}
	})
}
