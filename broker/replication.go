package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partition"
)

// replication.go wires broker/partition's replication to the broker's
// services: the cluster member, the replica fetchers, the metrics and the
// rate-limited logs.

// replicationDeps are the services the broker lends partition.Manager.
func (b *Broker) replicationDeps() partition.Deps {
	return partition.Deps{
		BrokerID: b.cfg.BrokerID,
		LogDirs:  b.cfg.LogDirs,
		// The storage engine, read at each open: tests wrap it.
		Open: func(dir string, s config.LogSettings) (partition.Log, error) {
			return b.openLog(dir, s)
		},
		Replication: b.cfg.Replication,
		Logger:      b.logger,
		RateLog: func(level slog.Level, kind, msg string, args ...any) {
			b.res.logs.log(level, kind, msg, args...)
		},
		Cluster:     replicationCluster{b},
		InterBroker: interBroker{b},
		Throttle:    followerThrottle{b.throttle},
		Metrics:     replicationMetrics{m: b.metrics, me: b.cfg.BrokerID},
		Shutdown:    b.shutdownCtx,
		WG:          &b.wg,
	}
}

// replicationCluster is the broker's member as replication sees it; the
// member joins at Start, after the Manager is made.
type replicationCluster struct{ b *Broker }

func (c replicationCluster) Metadata() cluster.Snapshot { return c.b.metadata() }

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

func (r replicationMetrics) ObserveOffsets(p *partition.Replica) { r.m.observeOffsets(p) }

func (r replicationMetrics) Truncated() { r.m.truncations.Inc() }

func (r replicationMetrics) Forget(p *partition.Replica) { r.m.forget(p) }

// interBroker is the broker's inter-broker listener, bound at Start, as
// the replica fetchers use it.
type interBroker struct{ b *Broker }

func (i interBroker) Listener() string { return i.b.interBroker }

func (i interBroker) Endpoint(br cluster.Broker) (string, int32, bool) {
	return i.b.endpointOf(br, i.b.interBroker)
}

func (i interBroker) Client(addr, clientID string) (*kgo.Client, error) {
	return i.b.interBrokerClient(addr, clientID)
}

// followerThrottle is the follower's side of the replication throttle.
type followerThrottle struct{ t *replicationThrottle }

func (f followerThrottle) Allowance() int64    { return f.t.allowance(false) }
func (f followerThrottle) Wait() time.Duration { return f.t.wait(false) }
func (f followerThrottle) Record(n int64)      { f.t.record(false, n) }
