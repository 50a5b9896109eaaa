package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestConsumerGivenPartitions reads given partitions from given offsets
// with no group, then seeks by offset and by time.
func TestConsumerGivenPartitions(t *testing.T) {
	cluster, _ := newZKCluster(t)
	cluster.CreateTopic(t, "plain", 3)
	produce(t, cluster.Addrs(), "plain", 3, 30) // partition p holds value-(3k+p) at offset k
	c, err := NewConsumer(ConsumerConfig{Brokers: cluster.Addrs()},
		map[string]map[int32]Offset{"plain": {0: AtOffset(7), 2: Earliest()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testenv.Context(t, 30*time.Second)
	got := map[int32][]string{}
	n := 0
	for m, err := range c.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got[m.Partition] = append(got[m.Partition], string(m.Value))
		if n++; n == 13 {
			break
		}
	}
	want0 := []string{"value-21", "value-24", "value-27"}
	if !slices.Equal(got[0], want0) || len(got[2]) != 10 || got[2][0] != "value-2" || got[2][9] != "value-29" || got[1] != nil {
		t.Fatalf("got %v", got)
	}
	if err := c.Seek(ctx, "plain", 0, 8); err != nil {
		t.Fatal(err)
	}
	msgs := pollUntil(t, c, 2)
	if v := string(msgs[0].Value); msgs[0].Partition != 0 || v != "value-24" {
		t.Fatalf("after seek: %d/%d=%s", msgs[0].Partition, msgs[0].Offset, v)
	}
	if err := c.Seek(ctx, "plain", 1, 0); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("seek on an unassigned partition: %v", err)
	}
	c.Assign(map[string]map[int32]Offset{"plain": {1: AtTime(time.Now().Add(-time.Hour))}})
	var p1 []string
	for _, m := range pollUntil(t, c, 10) {
		if m.Partition == 1 {
			p1 = append(p1, fmt.Sprintf("%d=%s", m.Offset, m.Value))
		}
	}
	if len(p1) == 0 || p1[0] != "0=value-1" {
		t.Fatalf("partition 1 from an hour ago: %v", p1)
	}
	if err := c.SeekToTime(ctx, "plain", 1, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

// pollUntil polls until at least n messages came (bounded).
func pollUntil(t *testing.T, c *Consumer, n int) []*Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*Message
	for len(out) < n {
		msgs, err := c.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d of %d: %v", len(out), n, err)
		}
		out = append(out, msgs...)
	}
	return out
}
