package client

import "errors"

var (
	// ErrInvalidConfig: a Config failed Validate; the message names the property.
	ErrInvalidConfig = errors.New("client: invalid configuration")
	// ErrClosed: the producer or consumer was closed.
	ErrClosed = errors.New("client: closed")
	// ErrStreamsCreated: CreateMessageStreams was already called on this
	// consumer (a consumer has one subscription, as in Kafka 0.8).
	ErrStreamsCreated = errors.New("client: message streams already created")
	// ErrRebalanceFailed: a rebalance did not settle within
	// rebalance.max.retries attempts.
	ErrRebalanceFailed = errors.New("client: rebalance failed")
	// ErrConsumerIDInUse: another consumer holds this consumer id (another
	// subscription, or ours past the wait for a stale session).
	ErrConsumerIDInUse = errors.New("client: consumer id registered by another session")
	// ErrNotOwned: the partition is not owned by this consumer (Seek on a
	// group consumer, or a partition outside a group-less consumer's set).
	ErrNotOwned = errors.New("client: partition not owned by this consumer")
	// ErrUnknownTopic: the topic has no partitions in the registry or the
	// broker's metadata.
	ErrUnknownTopic = errors.New("client: unknown topic")
	// ErrBadPartition: a partitioner returned a partition outside [0, n).
	ErrBadPartition = errors.New("client: partitioner returned an invalid partition")
	// ErrBadRegistry: a registry node holds data this client cannot parse.
	ErrBadRegistry = errors.New("client: malformed registry node")
)
