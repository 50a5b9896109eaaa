package broker

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/broker/txn"
)

// Transaction verification (KIP-890 part 1, Kafka >= 3.6 with
// transaction.partition.verification.enable=true, the default). Before the
// leader appends a transactional batch of a producer that has no ongoing
// transaction in the partition's log (the first batch of a transaction
// there), it asks the producer's transaction coordinator whether the
// partition is in the producer's ongoing transaction: itself when it leads
// the id's partition of __transaction_state, else AddPartitionsToTxn v4
// (verify-only, one transaction entry for all the request's partitions)
// over the inter-broker client of the markers. A partition that is not in
// the transaction gets INVALID_TXN_STATE and nothing is appended: a
// produce that arrives after its transaction ended (a delayed retry, a
// producer that never called AddPartitionsToTxn) can no longer open a
// transaction nobody will end, which would hold the last stable offset
// back for ever. Nothing is cached: every first batch asks again.
//
// A verification is guarded until its append: a marker for the producer
// written to the partition meanwhile (the transaction ended between the
// answer and the append) voids it, and the batch gets INVALID_TXN_STATE,
// as Kafka's VerificationGuard does.

// txnVerifyTimeout bounds a verification by a remote coordinator.
const txnVerifyTimeout = 10 * time.Second

// txnVerifyCodes maps the coordinator's answers to the Produce error a
// client handles (Kafka's ReplicaManager and AddPartitionsToTxnManager):
// retriable coordinator errors become NOT_ENOUGH_REPLICAS (older clients
// retry it without a metadata refresh), PRODUCER_FENCED becomes
// INVALID_PRODUCER_EPOCH (Produce has no PRODUCER_FENCED), and
// TRANSACTION_ABORTABLE (a 3.8+ coordinator's "not in the transaction")
// becomes INVALID_TXN_STATE for the Produce versions served here (<= 9).
func txnVerifyCode(code int16) int16 {
	switch kerr.ErrorForCode(code) {
	case kerr.NetworkException, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable,
		kerr.NotCoordinator, kerr.ConcurrentTransactions:
		return kerr.NotEnoughReplicas.Code
	case kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch.Code
	case kerr.TransactionAbortable:
		return kerr.InvalidTxnState.Code
	}
	return code
}

// txnBatchProducer returns the producer id and epoch of the first batch of
// records when it is transactional.
func txnBatchProducer(records []byte) (pid int64, epoch int16, ok bool) {
	if len(records) < batchHeaderSize || records[batchMagicOffset] != currentMagic {
		return 0, 0, false
	}
	attrs := binary.BigEndian.Uint16(records[batchAttributesOff:])
	pid = int64(binary.BigEndian.Uint64(records[batchProducerIDOff:]))
	epoch = int16(binary.BigEndian.Uint16(records[batchProducerEpochOf:]))
	return pid, epoch, attrs&attrTransactional != 0 && pid >= 0
}

// attrTransactional is the transactional bit of a batch's attributes.
const attrTransactional = 0x10

// ongoingTxnLog is a partition log that knows its producers' ongoing
// transactions (broker/partlog does; a log that cannot hold transactions is
// never verified).
type ongoingTxnLog interface {
	OngoingTxn(pid int64) bool
}

// needsTxnVerify reports whether p must verify a transactional batch of
// pid before appending it.
func (b *Broker) needsTxnVerify(p *partition.Replica, pid int64) bool {
	if b.cfg.DisableTxnVerification || p.TxnLog() == nil {
		return false
	}
	l, ok := p.Log().(ongoingTxnLog)
	return ok && !l.OngoingTxn(pid)
}

// verifyTxn asks id's coordinator whether tps are in the ongoing
// transaction of pid at epoch: the Produce error code of each (0: in it).
func (b *Broker) verifyTxn(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition) map[txn.TopicPartition]int16 {
	codes := b.askTxnCoordinator(ctx, id, pid, epoch, tps)
	for tp, c := range codes {
		codes[tp] = txnVerifyCode(c)
	}
	return codes
}

func (b *Broker) askTxnCoordinator(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition) map[txn.TopicPartition]int16 {
	all := func(code int16) map[txn.TopicPartition]int16 {
		out := make(map[txn.TopicPartition]int16, len(tps))
		for _, tp := range tps {
			out[tp] = code
		}
		return out
	}
	snap := b.metadata()
	sp, ok := snap.Partition(txn.StateTopic, b.txns.PartitionFor(id))
	if !ok || sp.Leader < 0 {
		return all(kerr.CoordinatorNotAvailable.Code)
	}
	if sp.Leader == b.cfg.BrokerID {
		return b.verifyLocal(id, pid, epoch, tps)
	}
	br, live := snap.Broker(sp.Leader)
	if !live {
		return all(kerr.CoordinatorNotAvailable.Code)
	}
	host, port, ok := b.endpointOf(br, b.interBroker)
	if !ok {
		return all(kerr.CoordinatorNotAvailable.Code)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
	cl, err := b.markerSender.client(addr)
	if err != nil {
		return all(kerr.NetworkException.Code)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = id, pid, epoch, true
	topics, parts := txn.ByTopic(tps)
	for i, topic := range topics {
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = topic, parts[i]
		t.Topics = append(t.Topics, tt)
	}
	req.Transactions = append(req.Transactions, t)
	ctx, cancel := context.WithTimeout(ctx, txnVerifyTimeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		b.markerSender.drop(addr, cl)
		b.res.logs.log(slog.LevelWarn, "txn-verify-failed", "transaction verification failed", "transactional_id", id,
			"coordinator", sp.Leader, "err", err)
		return all(kerr.NetworkException.Code)
	}
	if resp.ErrorCode != 0 {
		return all(resp.ErrorCode)
	}
	out := all(kerr.UnknownServerError.Code) // a partition the answer left out
	for _, rt := range resp.Transactions {
		if rt.TransactionalID != id {
			continue
		}
		for _, tt := range rt.Topics {
			for _, p := range tt.Partitions {
				tp := txn.TopicPartition{Topic: tt.Topic, Partition: p.Partition}
				if _, asked := out[tp]; asked {
					out[tp] = p.ErrorCode
				}
			}
		}
	}
	return out
}

// txnVerifyGuards are the verifications waiting for their append, striped
// by partition; the zero value is ready.
type txnVerifyGuards struct {
	stripes [32]txnGuardStripe
}

type txnGuardStripe struct {
	// mu also covers a guarded append, so that a marker is written either
	// before the check (voiding it) or after the append (ending the
	// transaction the batch joined).
	mu sync.Mutex
	m  map[txnGuardKey]*txnGuard
}

type txnGuardKey struct {
	topic     string
	partition int32
	pid       int64
}

// txnGuard counts the markers written for its key since the oldest open
// ticket, and the tickets open.
type txnGuard struct {
	markers uint64
	tickets int
}

// txnGuardTicket is one verification's claim: valid while no marker for
// the key was written after it was taken.
type txnGuardTicket struct {
	stripe  *txnGuardStripe
	key     txnGuardKey
	markers uint64
}

func (g *txnVerifyGuards) stripe(topic string, partition int32) *txnGuardStripe {
	h := fnv.New32a()
	h.Write([]byte(topic))
	return &g.stripes[(h.Sum32()+uint32(partition))%uint32(len(g.stripes))]
}

// begin takes a ticket before the coordinator is asked.
func (g *txnVerifyGuards) begin(topic string, partition int32, pid int64) *txnGuardTicket {
	s := g.stripe(topic, partition)
	k := txnGuardKey{topic, partition, pid}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[txnGuardKey]*txnGuard{}
	}
	e := s.m[k]
	if e == nil {
		e = &txnGuard{}
		s.m[k] = e
	}
	e.tickets++
	return &txnGuardTicket{stripe: s, key: k, markers: e.markers}
}

// markerWritten voids the open tickets of the producer on the partition;
// WriteTxnMarkers calls it before appending the marker.
func (g *txnVerifyGuards) markerWritten(topic string, partition int32, pid int64) {
	s := g.stripe(topic, partition)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.m[txnGuardKey{topic, partition, pid}]; e != nil {
		e.markers++
	}
}

// appendIf runs appendFn when t is still valid, and closes t; false when
// a marker voided it (nothing was run).
func (t *txnGuardTicket) appendIf(appendFn func()) bool {
	s := t.stripe
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[t.key]
	ok := e.markers == t.markers
	if ok {
		appendFn()
	}
	t.closeLocked(e)
	return ok
}

// release closes a ticket whose batch is not appended.
func (t *txnGuardTicket) release() {
	t.stripe.mu.Lock()
	defer t.stripe.mu.Unlock()
	t.closeLocked(t.stripe.m[t.key])
}

func (t *txnGuardTicket) closeLocked(e *txnGuard) {
	if e.tickets--; e.tickets == 0 {
		delete(t.stripe.m, t.key)
	}
}
