package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
)

// joinSlack is added to the connection timeout to bound the whole join:
// registration and the first metadata load after the session.
const joinSlack = 30 * time.Second

// WithCoordinator makes the broker join the cluster through connect
// instead of zookeeper.connect or its own in-process coordinator: several
// brokers of one process (tributary dev, tests) share one memcoord server
// this way. Topics found on disk are not registered by the broker then;
// see RestoreTopics, and SeedProducerIDs for producer ids.
func WithCoordinator(connect coord.SessionFactory) Option {
	return func(b *Broker) { b.connect = connect }
}

// CoordinationDir is the directory, under the first of log.dirs, where a
// broker without zookeeper.connect keeps its in-process coordination tree
// (topics and their assignments and configs, ACLs, SCRAM credentials,
// quotas, group offsets committed through ZooKeeper paths), so that a
// restart finds them as a ZooKeeper would keep them. It is not a partition
// directory (it has no -<partition> suffix).
const CoordinationDir = "coordination"

// chooseCoordinator sets b.connect from the configuration unless an option
// set it: ZooKeeper when zookeeper.connect is given, else a memcoord server
// private to this broker (the single-node mode), kept durably in
// CoordinationDir of the first log dir. A second broker on the same log
// dir fails here (memcoord.ErrLocked).
func (b *Broker) chooseCoordinator() error {
	switch {
	case b.connect != nil:
	case b.cfg.ZooKeeperConnect != "":
		zc := zkcoord.Config{
			SessionTimeout:    b.cfg.ZooKeeperSessionTimeout,
			ConnectionTimeout: b.cfg.ZooKeeperConnectionTimeout,
			Logger:            b.logger,
			DigestAuth:        b.cfg.ZooKeeperAuth.Digest,
			SetACL:            b.cfg.ZooKeeperAuth.SetACL,
			SensitivePaths:    config.ZooKeeperSensitivePaths,
		}
		connect := b.cfg.ZooKeeperConnect
		b.connect = func(ctx context.Context) (coord.Session, error) {
			return zkcoord.Connect(ctx, connect, zc)
		}
	default:
		srv, err := memcoord.Open(filepath.Join(b.cfg.LogDirs[0], CoordinationDir))
		if err != nil {
			return fmt.Errorf("broker: in-process coordination (no zookeeper.connect): %w", err)
		}
		b.standalone, b.ownCoord = true, srv
		b.connect = func(context.Context) (coord.Session, error) {
			return srv.Connect(memcoord.Config{Logger: b.logger}), nil
		}
	}
	return nil
}

// join registers the broker at its advertised address and brings the
// served partitions in line with the cluster metadata. Standalone brokers
// first register the topics found on disk, which their fresh in-process
// coordinator does not know.
func (b *Broker) join(ctx context.Context) error {
	// A restart right after a crash may wait out its own stale
	// registration: up to a session timeout plus
	// cluster.StaleRegistrationSlack.
	wait := b.cfg.ZooKeeperConnectionTimeout + b.cfg.ZooKeeperSessionTimeout + cluster.StaleRegistrationSlack + joinSlack
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	endpoints, protocols := b.registration()
	m, err := cluster.Join(ctx, b.connect, b.cfg.ClusterConfig(cluster.Config{
		BrokerID:       b.cfg.BrokerID,
		Endpoints:      endpoints,
		Protocols:      protocols,
		Logger:         b.logger,
		SessionTimeout: b.cfg.ZooKeeperSessionTimeout,
	}))
	if err != nil {
		return fmt.Errorf("broker: joining the cluster: %w", err)
	}
	b.mu.Lock()
	b.member = m
	b.mu.Unlock()
	if !b.standalone {
		b.pids.remote = &idBlocks{connect: b.connect, brokerID: b.cfg.BrokerID}
	}
	if b.standalone {
		// Not yet serving: leaders are awaited, join's reconcile opens them.
		if err := restoreTopics(ctx, false, b); err != nil {
			return err
		}
	}
	b.reconcile(m.Metadata())
	return nil
}

func (b *Broker) clusterMember() (*cluster.Member, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return nil, ErrClosed
	}
	if b.member == nil {
		return nil, ErrNotStarted
	}
	return b.member, nil
}

// Member returns the broker's cluster membership, nil before Start.
func (b *Broker) Member() *cluster.Member {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.member
}

// metadata returns the latest cluster metadata.
func (b *Broker) metadata() cluster.Snapshot {
	if m := b.Member(); m != nil {
		return m.Metadata()
	}
	return cluster.Snapshot{Controller: -1}
}

// unservedCode is the error for a partition this broker has no log open
// for: the client must refresh its metadata when the partition exists.
func unservedCode(snap cluster.Snapshot, topic string, p int32) int16 {
	if _, ok := snap.Partition(topic, p); ok {
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.UnknownTopicOrPartition.Code
}
