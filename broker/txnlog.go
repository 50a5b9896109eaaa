package broker

import (
	"github.com/tributary/tributary/broker/partlog"
)

// txnPartitionLog is what transactions need from a partition's storage,
// beyond PartitionLog: broker/partlog has it, the tests' in-memory log does
// not (its partitions answer as if no transaction ever ran, and refuse
// markers).
type txnPartitionLog interface {
	// AppendMarker writes a COMMIT or ABORT marker for the producer (see
	// partlog.Log.AppendMarker).
	AppendMarker(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, leaderEpoch int32) (partlog.AppendResult, error)
	// LastStableOffset is min(first offset of the oldest ongoing
	// transaction, hw).
	LastStableOffset(hw int64) int64
	// AbortedTransactions overlapping [from, upper), for read_committed.
	AbortedTransactions(from, upper int64) []partlog.AbortedTxn
	// Producers lists the partition's active producers (DescribeProducers).
	Producers() []partlog.ProducerInfo
}

// txnLog returns p's log as a txnPartitionLog, nil when it is not one.
func (p *partition) txnLog() txnPartitionLog {
	t, _ := p.log.(txnPartitionLog)
	return t
}

// lastStable is p's last stable offset for a high watermark.
func (p *partition) lastStable(hw int64) int64 {
	if t := p.txnLog(); t != nil {
		return t.LastStableOffset(hw)
	}
	return hw
}

// TxnMarkerListener hears every transaction marker this broker appended as
// the leader of a __consumer_offsets partition (WriteTxnMarkers), after
// the marker is committed (in every in-sync replica): the group
// coordinator then materializes (commit) or discards (abort) the
// producer's pending transactional offset commits for that partition.
type TxnMarkerListener interface {
	TxnMarker(partition int32, producerID int64, producerEpoch int16, commit bool)
}

type noTxnMarkerListener struct{}

func (noTxnMarkerListener) TxnMarker(int32, int64, int16, bool) {}

// txnMarkerListenerBox holds a TxnMarkerListener in an atomic.Value (one
// concrete type, whatever the listener's).
type txnMarkerListenerBox struct{ l TxnMarkerListener }

// SetTxnMarkerListener installs the listener told about markers written to
// this broker's __consumer_offsets partitions; nil restores the no-op
// default.
func (b *Broker) SetTxnMarkerListener(l TxnMarkerListener) {
	if l == nil {
		l = noTxnMarkerListener{}
	}
	b.txnMarkers.Store(&txnMarkerListenerBox{l})
}

func (b *Broker) txnMarkerListener() TxnMarkerListener {
	if box := b.txnMarkers.Load(); box != nil {
		return box.l
	}
	return noTxnMarkerListener{}
}
