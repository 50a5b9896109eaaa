package devcluster

import "errors"

// Sentinel errors.
var (
	// ErrInvalidConfig marks a Config that Validate rejects.
	ErrInvalidConfig = errors.New("devcluster: invalid config")
	// ErrNoBroker marks a broker id outside 1..Brokers.
	ErrNoBroker = errors.New("devcluster: no such broker")
	// ErrClosed marks a call on a closed Cluster.
	ErrClosed = errors.New("devcluster: cluster closed")
)
