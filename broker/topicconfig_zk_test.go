package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// zkTestChroot returns a zookeeper.connect string with a fresh chroot on
// the test ZooKeeper, removed when t ends.
func zkTestChroot(t *testing.T) string {
	t.Helper()
	return zktest.Chroot(t, testenv.ZooKeeper(t), "broker-test")
}

// TestTopicConfigsOverZooKeeper: overrides created through one broker and
// altered through the other go through /config/topics/<topic> under the
// chroot and are applied by the broker leading each partition.
func TestTopicConfigsOverZooKeeper(t *testing.T) {
	connect := zkTestChroot(t)
	zk := func(id int32) func(*config.Config) {
		return func(c *config.Config) {
			c.BrokerID, c.ZooKeeperConnect, c.ZooKeeperSessionTimeout = id, connect, 6*time.Second
		}
	}
	b1 := newTestBroker(t, zk(1))
	b2 := newTestBroker(t, zk(2))
	ctx := testenv.Context(t, time.Minute)
	if _, err := b1.Member().AwaitMetadata(ctx, func(s cluster.Snapshot) bool { return len(s.Brokers) == 2 }); err != nil {
		t.Fatal(err)
	}
	adm1 := kadm.NewClient(newClient(t, b1.Addr()))
	adm2 := kadm.NewClient(newClient(t, b2.Addr()))
	if resp, err := adm1.CreateTopic(ctx, 2, 1, map[string]*string{"segment.bytes": strp("100000")}, "zkconf"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v / %v (%s)", err, resp.Err, resp.ErrMessage)
	}
	if err := b2.awaitServed(ctx, b2.topicReady("zkconf")); err != nil {
		t.Fatal(err)
	}
	rs, err := adm2.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: strp("4242")}}, "zkconf")
	if err != nil || len(rs) != 1 || rs[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, rs)
	}
	for _, b := range []*testBroker{b1, b2} {
		p := b.partitions.Leader("zkconf", b.cfg.BrokerID-1)
		for p == nil || p.Config().MaxMessageBytes != 4242 || p.Settings().SegmentBytes != 100000 {
			select {
			case <-ctx.Done():
				t.Fatalf("broker %d did not apply the overrides", b.cfg.BrokerID)
			case <-time.After(20 * time.Millisecond):
			}
			p = b.partitions.Leader("zkconf", b.cfg.BrokerID-1)
		}
	}
	rcs, err := adm1.DescribeTopicConfigs(ctx, "zkconf")
	if err != nil {
		t.Fatal(err)
	}
	got := configValues(t, rcs, "zkconf")
	if c := got["max.message.bytes"]; c.MaybeValue() != "4242" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("max.message.bytes = %q (%v)", c.MaybeValue(), c.Source)
	}
	if c := got["segment.bytes"]; c.MaybeValue() != "100000" {
		t.Errorf("segment.bytes = %q", c.MaybeValue())
	}
}
