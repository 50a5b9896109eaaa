package cluster

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestValidateTopicName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"events", true},
		{"Page.Views_v2-eu", true},
		{"__consumer_offsets", true},
		{strings.Repeat("a", 249), true},
		{strings.Repeat("a", 250), false},
		{"", false},
		{".", false},
		{"..", false},
		{"...", true},
		{"a b", false},
		{"a/b", false},
		{"a:b", false},
		{"é", false},
		{"tab\t", false},
	} {
		err := ValidateTopicName(c.name)
		if c.ok && err != nil {
			t.Errorf("%q: unexpected %v", c.name, err)
		}
		if !c.ok && !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("%q: got %v, want ErrInvalidTopic", c.name, err)
		}
	}
}

func TestAssignReplicas(t *testing.T) {
	for _, c := range []struct {
		name       string
		brokers    []int32
		partitions int32
		rf         int16
		want       [][]int32
		err        error
	}{
		{name: "rf1 round robin", brokers: []int32{1, 2, 3}, partitions: 6, rf: 1,
			want: [][]int32{{1}, {2}, {3}, {1}, {2}, {3}}},
		// The example in Kafka's AdminUtils comment (5 brokers, 10
		// partitions, RF 3, start index 0): the followers shift by one
		// more broker after the first round.
		{name: "kafka example", brokers: []int32{0, 1, 2, 3, 4}, partitions: 10, rf: 3,
			want: [][]int32{{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1},
				{0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2}}},
		{name: "sparse ids", brokers: []int32{3, 7}, partitions: 3, rf: 2,
			want: [][]int32{{3, 7}, {7, 3}, {3, 7}}},
		{name: "rf equals brokers", brokers: []int32{1}, partitions: 2, rf: 1, want: [][]int32{{1}, {1}}},
		{name: "rf above brokers", brokers: []int32{1, 2}, partitions: 1, rf: 3, err: ErrInvalidReplicationFactor},
		{name: "no brokers", brokers: nil, partitions: 1, rf: 1, err: ErrInvalidReplicationFactor},
		{name: "rf zero", brokers: []int32{1}, partitions: 1, rf: 0, err: ErrInvalidReplicationFactor},
		{name: "no partitions", brokers: []int32{1}, partitions: 0, rf: 1, err: ErrInvalidPartitions},
	} {
		got, err := assignReplicas(c.brokers, c.partitions, c.rf)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s: got %v, want %v", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %v, %v\nwant %v", c.name, got, err, c.want)
		}
	}
}

// TestAssignReplicasSpread checks the properties for many shapes: leaders
// differ by at most one per broker and no partition repeats a broker.
func TestAssignReplicasSpread(t *testing.T) {
	for n := 1; n <= 6; n++ {
		brokers := make([]int32, n)
		for i := range brokers {
			brokers[i] = int32(10 + i)
		}
		for rf := 1; rf <= n; rf++ {
			for parts := int32(1); parts <= 25; parts++ {
				got, err := assignReplicas(brokers, parts, int16(rf))
				if err != nil {
					t.Fatal(err)
				}
				leaders := map[int32]int{}
				for p, rs := range got {
					if len(rs) != rf {
						t.Fatalf("n=%d rf=%d p=%d: %v", n, rf, p, rs)
					}
					seen := map[int32]bool{}
					for _, r := range rs {
						if seen[r] {
							t.Fatalf("n=%d rf=%d p=%d repeats %d: %v", n, rf, p, r, rs)
						}
						seen[r] = true
					}
					leaders[rs[0]]++
				}
				lo, hi := int(parts), 0
				for _, b := range brokers {
					lo, hi = min(lo, leaders[b]), max(hi, leaders[b])
				}
				if hi-lo > 1 {
					t.Fatalf("n=%d rf=%d parts=%d: leaders %v", n, rf, parts, leaders)
				}
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero", Config{}, true},
		{"full", Config{BrokerID: 3, Host: "h", Port: 1, Endpoints: []string{"PLAINTEXT://h:1", "SSL://[::1]:2"}, Rack: "r"}, true},
		{"negative id", Config{BrokerID: -1}, false},
		{"port", Config{Port: 70000}, false},
		{"endpoint without listener", Config{Endpoints: []string{"h:1"}}, false},
		{"endpoint port", Config{Endpoints: []string{"PLAINTEXT://h:x"}}, false},
		{"host", Config{Host: "a/b"}, false},
		{"backoff", Config{RetryBackoff: -1}, false},
	} {
		err := c.cfg.Validate()
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if got := (Config{Host: "h", Port: 7}).endpoints(); !reflect.DeepEqual(got, []string{"PLAINTEXT://h:7"}) {
		t.Errorf("default endpoints %v", got)
	}
}
