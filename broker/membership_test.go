package broker

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestServesOnlyLedPartitions: of two brokers sharing a coordinator, each
// serves the partitions it leads and answers NOT_LEADER_OR_FOLLOWER for the
// other's, UNKNOWN_TOPIC_OR_PARTITION for what does not exist; a deleted
// topic's data is gone from both.
func TestServesOnlyLedPartitions(t *testing.T) {
	srv := memcoord.NewServer()
	connect := WithCoordinator(func(context.Context) (coord.Session, error) { return srv.Connect(memcoord.Config{}), nil })
	b1 := newTestBroker(t, func(c *config.Config) { c.BrokerID = 1 }, connect)
	b2 := newTestBroker(t, func(c *config.Config) { c.BrokerID = 2 }, connect)
	ctx := testenv.Context(t, time.Minute)
	if err := b1.CreateTopic(ctx, "split", 2); err != nil {
		t.Fatal(err)
	}
	if err := b2.awaitServed(ctx, b2.topicReady("split")); err != nil {
		t.Fatal(err)
	}
	// Round-robin from the first broker: partition 0 on 1, partition 1 on 2.
	if b1.partitions.Leader("split", 0) == nil || b1.partitions.Leader("split", 1) != nil ||
		b2.partitions.Leader("split", 1) == nil || b2.partitions.Leader("split", 0) != nil {
		t.Fatal("each broker must open exactly the partition it leads")
	}
	c := dialRaw(t, b1.Addr())
	for _, tc := range []struct {
		topic string
		part  int32
		want  int16
	}{
		{"split", 0, 0},
		{"split", 1, kerr.NotLeaderForPartition.Code},
		{"split", 2, kerr.UnknownTopicOrPartition.Code},
		{"nope", 0, kerr.UnknownTopicOrPartition.Code},
	} {
		resp := c.roundTrip(produceRequest(9, 1, tc.topic, tc.part, makeBatch(1, -1, -1, -1, "a"))).(*kmsg.ProduceResponse)
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Errorf("produce %s/%d: error %d, want %d", tc.topic, tc.part, got, tc.want)
		}
		fetch := c.roundTrip(fetchRequest(12, tc.topic, tc.part, 0, 0, 1)).(*kmsg.FetchResponse)
		if got := fetch.Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Errorf("fetch %s/%d: error %d, want %d", tc.topic, tc.part, got, tc.want)
		}
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	mresp := c.roundTrip(md).(*kmsg.MetadataResponse)
	if len(mresp.Brokers) != 2 || len(mresp.Topics) != 1 || mresp.Topics[0].Partitions[1].Leader != 2 {
		t.Fatalf("metadata: %d brokers, topics %+v", len(mresp.Brokers), mresp.Topics)
	}

	dir1, dir2 := b1.partitions.Leader("split", 0).Dir(), b2.partitions.Leader("split", 1).Dir()
	if err := b1.DeleteTopic(ctx, "split"); err != nil {
		t.Fatal(err)
	}
	if err := b2.awaitServed(ctx, topicGone("split")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir1, dir2} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s after delete: %v, want it gone", d, err)
		}
	}
}
