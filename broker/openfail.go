package broker

import (
	"context"
	"errors"
	"log/slog"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/broker/partlog"
)

// partitionOpenFailed is the reconciler's report of a failed open: counted,
// logged at most once a second (with how many were suppressed), retried
// after a back-off, and told to whoever waits for the topic.
func (b *Broker) partitionOpenFailed(k partition.Key, err error) {
	b.res.openFailed.Inc()
	wait := b.res.failures.Failed(k, err)
	kind := "open-failed"
	if errors.Is(err, partlog.ErrNoDescriptors) {
		kind = "open-failed-descriptors"
	}
	b.res.logs.log(slog.LevelError, kind, "opening a led partition failed; retrying with back-off",
		"topic", k.Topic, "partition", k.Partition, "retry_in", wait, "err", err)
}

// createTopicReported is createTopic that returns as soon as one of the
// topic's partitions on this broker fails to open, with the cause, rather
// than wait out the timeout.
func (b *Broker) createTopicReported(ctx context.Context, name string, n int32, rf int16, overrides map[string]string, existingOK bool) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := b.res.failures.Watch(name, func(err error) { cancel(err) })
	defer stop()
	err := b.createTopic(ctx, name, n, rf, overrides, existingOK)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, partition.ErrOpen) {
		return cause
	}
	return err
}

// leads reports whether snap makes this broker the partition's leader, or
// would: a new partition's replicas open it as soon as its assignment is
// known, before the controller's partition state names a leader, so an open
// that failed then is reported by the replica that will lead (the first).
func (b *Broker) leads(snap cluster.Snapshot, topic string, p int32) bool {
	cp, ok := snap.Partition(topic, p)
	if !ok {
		return false
	}
	if cp.Leader < 0 {
		return len(cp.Replicas) > 0 && cp.Replicas[0] == b.cfg.BrokerID
	}
	return cp.Leader == b.cfg.BrokerID
}
