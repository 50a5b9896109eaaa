package group

import "testing"

// Java's "...".hashCode() values, computed with the JDK, pin the placement
// to Kafka's.
func TestPartitionForMatchesKafka(t *testing.T) {
	for _, tc := range []struct {
		group string
		n     int32
		want  int32
	}{
		{"", 50, 0},
		{"my-group", 50, 36},           // hashCode -1906497762
		{"console-consumer-1", 50, 24}, // hashCode 35782224
		{"polygenelubricants", 50, 0},  // hashCode Integer.MIN_VALUE: Kafka's abs gives 0
		{"é-group", 50, 7},             // hashCode 2016868507, over UTF-16 code units
		{"é-group", 7, 3},
	} {
		if got := PartitionFor(tc.group, tc.n); got != tc.want {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", tc.group, tc.n, got, tc.want)
		}
	}
}
