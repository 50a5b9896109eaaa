package broker

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
