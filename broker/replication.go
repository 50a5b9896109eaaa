package broker

import (
	"context"
	"log/slog"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/partition"
)

// replication.go wires broker/partition's replication to the broker's
// services: the cluster member, the replica fetchers, the metrics and the
// rate-limited logs.

// replicationDeps are the services the broker lends partition.Manager.
func (b *Broker) replicationDeps() partition.Deps {
	return partition.Deps{
		BrokerID:   b.cfg.BrokerID,
		LogDirs:    b.cfg.LogDirs,
		LagTimeMax: b.cfg.Replication.LagTimeMax,
		Logger:     b.logger,
		Warn: func(kind, msg string, args ...any) {
			b.res.logs.log(slog.LevelWarn, kind, msg, args...)
		},
		Cluster:  replicationCluster{b},
		Fetchers: b.fetchers,
		Metrics:  replicationMetrics{m: b.metrics, me: b.cfg.BrokerID},
		Shutdown: b.shutdownCtx,
		WG:       &b.wg,
	}
}

// replicationCluster is the broker's member as replication sees it; the
// member joins at Start, after the Manager is made.
type replicationCluster struct{ b *Broker }

func (c replicationCluster) IsShuttingDown(id int32) bool {
	return c.b.member.Metadata().IsShuttingDown(id)
}

func (c replicationCluster) AlterISR(ctx context.Context, topic string, p, epoch int32, isr []int32) (cluster.Partition, error) {
	return c.b.member.AlterISR(ctx, topic, p, epoch, isr)
}

// replicationMetrics records replication in the broker's metrics.
type replicationMetrics struct {
	m  *metrics
	me int32
}

func (r replicationMetrics) ObserveReplica(p *partition.Replica, cp cluster.Partition) {
	r.m.observeReplica(p, cp, r.me)
}

func (r replicationMetrics) ObserveISR(p *partition.Replica, replicas, isr int) {
	r.m.observeISR(p, replicas, isr)
}

func (r replicationMetrics) ISRChanged(why string) { r.m.isrChanges.WithLabelValues(why).Inc() }
