package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/txn"
)

// The transaction coordinator (broker/txn) is wired in here, the way the
// group coordinator is in groups.go: the broker opens the partitions of
// __transaction_state it leads like any other, runCoordinatorLoader hands
// them to the coordinator with their leader epoch, and the coordinator's
// markers go to the partitions' leaders as WriteTxnMarkers requests over
// the inter-broker listener.

// newTxnCoordinator builds the transaction coordinator from the
// configuration; producer ids come from the broker's producer id blocks.
func (b *Broker) newTxnCoordinator() error {
	tc := b.cfg.Txn
	tc.Logger = b.logger.With("component", "txn-coordinator")
	b.markerSender = &txnMarkerWriter{b: b, clients: map[string]*kgo.Client{}}
	c, err := txn.New(tc, func(ctx context.Context) (int64, error) {
		ctx, cancel := context.WithTimeout(ctx, producerIDWait)
		defer cancel()
		return b.pids.allocate(ctx)
	}, b.markerSender)
	if err != nil {
		return err
	}
	b.txns = c
	return nil
}

// syncTxnPartitions loads the state partitions this broker leads into the
// transaction coordinator at their leader epoch and unloads the others.
func (b *Broker) syncTxnPartitions() {
	b.syncCoordinatorPartitions(txn.StateTopic, b.txns, func(p int32, l offsetsLog) {
		b.txns.Load(p, l, l.p.LeaderEpoch())
	})
}

// runTxnExpiry aborts timed-out transactions and removes expired
// transactional ids at their intervals.
func (b *Broker) runTxnExpiry() {
	defer b.wg.Done()
	abort := time.NewTicker(b.txns.Config().AbortCheckInterval)
	defer abort.Stop()
	remove := time.NewTicker(b.txns.Config().RemoveExpiredInterval)
	defer remove.Stop()
	for {
		select {
		case <-b.shutdownCtx.Done():
			return
		case <-abort.C:
			b.txns.AbortTimedOut()
		case <-remove.C:
			b.txns.RemoveExpired()
		}
	}
}

// ensureTxnStateTopic creates __transaction_state on first use, as Kafka
// does: transaction.state.log.num.partitions partitions,
// transaction.state.log.replication.factor replicas capped at the live
// brokers, compacted, min.insync.replicas from
// transaction.state.log.min.isr (capped at the replicas).
func (b *Broker) ensureTxnStateTopic(ctx context.Context) error {
	m, err := b.clusterMember()
	if err != nil {
		return err
	}
	snap := m.Metadata()
	cfg := b.txns.Config()
	if t, ok := snap.Topics[txn.StateTopic]; ok {
		if int32(len(t.Partitions)) != cfg.StatePartitions {
			return fmt.Errorf("%w: %s has %d partitions, transaction.state.log.num.partitions is %d", config.ErrInvalidConfig,
				txn.StateTopic, len(t.Partitions), cfg.StatePartitions)
		}
		return nil
	}
	rf := cappedReplication(cfg.StateReplication, len(snap.Brokers))
	return b.createInternalTopic(ctx, txn.StateTopic, cfg.StatePartitions, rf, map[string]string{
		"cleanup.policy":      config.PolicyCompact,
		"segment.bytes":       strconv.Itoa(int(cfg.StateSegmentBytes)),
		"min.insync.replicas": strconv.Itoa(int(min(cfg.StateMinISR, int32(rf)))),
	})
}

// txnMarkerWriter sends a transaction's markers to the leaders of its
// partitions (WriteTxnMarkers over the inter-broker listener), one client
// per leader kept across transactions.
type txnMarkerWriter struct {
	b       *Broker
	mu      sync.Mutex
	clients map[string]*kgo.Client
}

// WriteMarkers is txn.Markers: nil once every partition's leader has
// written the marker; a partition that no longer exists is skipped.
func (w *txnMarkerWriter) WriteMarkers(ctx context.Context, m txn.Marker) error {
	snap := w.b.metadata()
	byLeader := map[int32]map[string][]int32{}
	for _, tp := range m.Partitions {
		p, ok := snap.Partition(tp.Topic, tp.Partition)
		if !ok {
			continue // deleted: nothing left to mark
		}
		if p.Leader < 0 {
			return fmt.Errorf("%s-%d has no leader", tp.Topic, tp.Partition)
		}
		if byLeader[p.Leader] == nil {
			byLeader[p.Leader] = map[string][]int32{}
		}
		byLeader[p.Leader][tp.Topic] = append(byLeader[p.Leader][tp.Topic], tp.Partition)
	}
	var errs []error
	for leader, topics := range byLeader {
		br, live := snap.Broker(leader)
		if !live {
			errs = append(errs, fmt.Errorf("leader %d is not live", leader))
			continue
		}
		host, port, ok := w.b.endpointOf(br, w.b.interBroker)
		if !ok {
			errs = append(errs, fmt.Errorf("leader %d has no listener %s", leader, w.b.interBroker))
			continue
		}
		if err := w.send(ctx, net.JoinHostPort(host, strconv.Itoa(int(port))), m, topics); err != nil {
			errs = append(errs, fmt.Errorf("leader %d: %w", leader, err))
		}
	}
	return errors.Join(errs...)
}

func (w *txnMarkerWriter) send(ctx context.Context, addr string, m txn.Marker, topics map[string][]int32) error {
	cl, err := w.client(addr)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	for t, ps := range topics {
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = t, ps
		mk.Topics = append(mk.Topics, mt)
	}
	req.Markers = append(req.Markers, mk)
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		w.drop(addr, cl)
		return err
	}
	var errs []error
	for _, rm := range resp.Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				e := kerr.ErrorForCode(rp.ErrorCode)
				switch {
				case e == nil:
				case e == kerr.TransactionCoordinatorFenced, e == kerr.InvalidProducerEpoch:
					errs = append(errs, fmt.Errorf("%s-%d: %w: %w", rt.Topic, rp.Partition, txn.ErrMarkersFenced, e))
				case e == kerr.UnsupportedForMessageFormat:
					// A log that cannot hold markers: as Kafka, skip it.
				default:
					if _, ok := w.b.metadata().Partition(rt.Topic, rp.Partition); !ok {
						continue // deleted meanwhile
					}
					errs = append(errs, fmt.Errorf("%s-%d: %w", rt.Topic, rp.Partition, e))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (w *txnMarkerWriter) client(addr string) (*kgo.Client, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cl := w.clients[addr]; cl != nil {
		return cl, nil
	}
	cl, err := w.b.interBrokerClient(addr, "tributary-txn-markers-"+strconv.Itoa(int(w.b.cfg.BrokerID)))
	if err != nil {
		return nil, err
	}
	w.clients[addr] = cl
	return cl, nil
}

// drop closes a client whose connection failed; the next send dials again.
func (w *txnMarkerWriter) drop(addr string, cl *kgo.Client) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.clients[addr] == cl {
		delete(w.clients, addr)
		cl.Close()
	}
}

func (w *txnMarkerWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for addr, cl := range w.clients {
		cl.Close()
		delete(w.clients, addr)
	}
}
