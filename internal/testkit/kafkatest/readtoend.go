package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/network"
)

// ReadTimeout bounds ReadToEnd.
const ReadTimeout = 2 * time.Minute

// ReadToEnd returns every record of topic from the start up to the end
// offsets its partitions have when it is called, in partition order and
// offset order within a partition. It fails t if the end offsets cannot be
// listed or the records do not all arrive within ReadTimeout.
func ReadToEnd(t testing.TB, seeds []string, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ReadTimeout)
	defer cancel()
	conn := network.ClientConfig{Brokers: seeds}
	admin, err := network.NewClient(conn)
	if err != nil {
		t.Fatalf("kgo client: %v", err)
	}
	defer admin.Close()
	listed, err := kadm.NewClient(admin).ListEndOffsets(ctx, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	end := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			end[o.Partition] = o.Offset
		}
	})
	byPartition := map[int32][]*kgo.Record{}
	if len(end) > 0 {
		cl, err := network.NewClient(conn, kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatalf("kgo client: %v", err)
		}
		defer cl.Close()
		next := map[int32]int64{}
		for done := 0; done < len(end); {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("reading %s to its end offsets %v: read up to %v within %v", topic, end, next, ReadTimeout)
			}
			fs.EachError(func(_ string, p int32, err error) { t.Logf("fetching %s-%d: %v (retried)", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				e, want := end[r.Partition]
				if !want || r.Offset >= e {
					return
				}
				byPartition[r.Partition] = append(byPartition[r.Partition], r)
				next[r.Partition] = r.Offset + 1
				if r.Offset == e-1 {
					done++
				}
			})
		}
	}
	var out []*kgo.Record
	for p := range int32(len(listed[topic])) {
		out = append(out, byPartition[p]...)
	}
	return out
}
