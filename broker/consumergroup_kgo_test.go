package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/kafkatest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestConsumerGroupKgoServerSide: franz-go members on the KIP-848
// protocol (ServerSideBalancer) under produce load; one member's client
// is cut off without leaving, one is added. Every record is processed at
// least once, the final committed offsets are the partitions' ends, and
// the assignment is stable and complete after each change.
func TestConsumerGroupKgoServerSide(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) {
		groupTestConfig(c)
		c.Groups.ConsumerSessionTimeout = 3 * time.Second
		c.Groups.ConsumerHeartbeatInterval = 200 * time.Millisecond
	})
	ctx := testenv.Context(t, 2*time.Minute)
	const parts, total, topic, group = 6, 3000, "kip848", "g848"
	if err := b.CreateTopic(ctx, topic, parts); err != nil {
		t.Fatal(err)
	}
	admin := newClient(t, b.Addr())
	p := kafkatest.NewProcessed()

	produced := make(chan error, 1)
	go func() {
		produced <- kafkatest.ProduceNumbered(ctx, newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, parts, total)
	}()

	memberCtx, stop := context.WithCancel(ctx)
	defer stop()
	var clients []*kgo.Client
	victim := &kafkatest.KillableDialer{}
	for i := range 3 {
		var d *kafkatest.KillableDialer
		if i == 0 {
			d = victim
		}
		clients = append(clients, kafkatest.RunMember848(t, memberCtx, []string{b.Addr()}, group, topic, p, d))
	}
	kafkatest.AwaitConsumerGroup(t, ctx, admin, group, 3, parts)

	victim.Kill()
	go clients[0].Close() // its leave cannot reach the broker
	start := time.Now()
	kafkatest.AwaitConsumerGroup(t, ctx, admin, group, 2, parts)
	t.Logf("member cut off: group reassigned after %v", time.Since(start))

	clients = append(clients, kafkatest.RunMember848(t, memberCtx, []string{b.Addr()}, group, topic, p, nil))
	start = time.Now()
	kafkatest.AwaitConsumerGroup(t, ctx, admin, group, 3, parts)
	t.Logf("member added: group settled after %v", time.Since(start))
	if got := counterValue(t, b.reg, "tributary_group_members", map[string]string{"group": group, "state": "Stable"}); got != 3 {
		t.Errorf("tributary_group_members of the stable group: %v", got)
	}

	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	kafkatest.AwaitProcessedAndCommitted(t, ctx, admin, group, topic, p, total)
	stop()
	for _, cl := range clients[1:] {
		cl.Close()
	}
}
