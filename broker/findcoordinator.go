package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/group"
	"github.com/tributary/tributary/broker/txn"
)

// Coordinator key types (frozen by the protocol).
const (
	coordinatorTypeGroup       = 0
	coordinatorTypeTransaction = 1
)

// handleFindCoordinator answers where a group's coordinator is (key type
// 0: the leader of the group's partition of __consumer_offsets) or a
// transactional id's (key type 1: the leader of its partition of
// __transaction_state); the topics are created on first use, as Kafka
// does. v4 carries a batch of keys.
func (b *Broker) handleFindCoordinator(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		if req.CoordinatorType == coordinatorTypeGroup && !b.authorizeGroup(r, acl.OpDescribe, key) {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Port, c.ErrorCode = key, -1, -1, errGroupAuth.Code
			resp.Coordinators = append(resp.Coordinators, c)
			continue
		}
		if req.CoordinatorType == coordinatorTypeTransaction && !b.authorize(r, acl.OpDescribe, acl.ResourceTransactionalID, key) {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Port, c.ErrorCode = key, -1, -1, errTxnAuth.Code
			resp.Coordinators = append(resp.Coordinators, c)
			continue
		}
		resp.Coordinators = append(resp.Coordinators, b.findCoordinator(ctx, req.CoordinatorType, key, b.requestListener(r)))
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
		if req.Version >= 1 {
			resp.ErrorMessage = c.ErrorMessage
		}
	}
	return kmsgReply{resp}, nil
}

// findCoordinator names the coordinator of key at its endpoint on listener
// (the one the request arrived on).
func (b *Broker) findCoordinator(ctx context.Context, keyType int8, key, listener string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(code *kerr.Error, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = code.Code, kmsg.StringPtr(msg)
		return c
	}
	wctx, cancel := context.WithTimeout(ctx, offsetsTopicWait)
	defer cancel()
	var (
		topic   string
		index   int32
		ensure  func(context.Context) error
		awaitFn func(context.Context, int32) error
	)
	switch keyType {
	case coordinatorTypeGroup:
		topic, index, ensure, awaitFn = group.OffsetsTopic, b.groups.PartitionFor(key), b.ensureOffsetsTopic, b.groups.AwaitLoaded
	case coordinatorTypeTransaction:
		if key == "" {
			return fail(kerr.InvalidRequest, "empty transactional id")
		}
		topic, index, ensure, awaitFn = txn.StateTopic, b.txns.PartitionFor(key), b.ensureTxnStateTopic, b.txns.AwaitLoaded
	default:
		return fail(kerr.InvalidRequest, "unknown coordinator key type")
	}
	if err := ensure(wctx); err != nil {
		b.logger.Warn("coordinator topic not available", "topic", topic, "err", err)
		return fail(kerr.CoordinatorNotAvailable, topic+" is not available yet")
	}
	snap := b.metadata()
	p, ok := snap.Partition(topic, index)
	if !ok || p.Leader < 0 {
		return fail(kerr.CoordinatorNotAvailable, "the coordinator's partition has no leader")
	}
	if p.Leader == b.cfg.BrokerID {
		// Leading the partition in the metadata is not serving it yet:
		// the reconciler opens it and the coordinator reads it back
		// after. Naming this broker before that got the client's next
		// request NOT_COORDINATOR, and librdkafka then waits seconds
		// before joining again, past the initial rebalance delay its
		// group-mates join within.
		if err := awaitFn(wctx, index); err != nil {
			return fail(kerr.CoordinatorNotAvailable, "the coordinator's partition is still loading")
		}
		host, port, _ := b.endpointOf(cluster.Broker{ID: b.cfg.BrokerID}, listener)
		c.NodeID, c.Host, c.Port = b.cfg.BrokerID, host, port
		return c
	}
	br, live := snap.Broker(p.Leader)
	if !live {
		return fail(kerr.CoordinatorNotAvailable, "the coordinator is not live")
	}
	host, port, ok := b.endpointOf(br, listener)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable, "the coordinator has no listener "+listener)
	}
	c.NodeID, c.Host, c.Port = br.ID, host, port
	return c
}
