package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
)

// Group consumer defaults: Kafka 0.8's, except where noted.
const (
	DefaultAutoCommitInterval    = 60 * time.Second // auto.commit.interval.ms
	DefaultRebalanceMaxRetries   = 4                // rebalance.max.retries
	DefaultRebalanceBackoff      = 2 * time.Second  // rebalance.backoff.ms
	DefaultZooKeeperSession      = 6 * time.Second  // zookeeper.session.timeout.ms
	DefaultQueuedMaxChunks       = 10               // queued.max.message.chunks
	DefaultFetchMaxWait          = 100 * time.Millisecond
	DefaultFetchMaxPartitionSize = 1 << 20 // fetch.message.max.bytes
	// DefaultMetadataRefresh is how often a consumer re-reads partition
	// counts from the broker when the topic has no ZooKeeper registry
	// (single-broker mode): there is no watch to tell it.
	DefaultMetadataRefresh = 10 * time.Second
)

// Offset reset policies (auto.offset.reset).
const (
	// ResetLargest starts a partition without a committed offset at its end
	// (Kafka 0.8's default; "latest" is accepted as a synonym).
	ResetLargest = "largest"
	// ResetSmallest starts it at its first offset ("earliest" too).
	ResetSmallest = "smallest"
)

// GroupConfig configures a GroupConsumer. Zero values mean defaults; the
// comments name the Kafka 0.8 consumer property each field stands for.
type GroupConfig struct {
	// GroupID is group.id (required).
	GroupID string
	// ConsumerID is consumer.id: this member's name in the registries.
	// Default "<group>_<hostname>-<unix ms>-<8 hex>", Kafka 0.8's form.
	ConsumerID string
	// Brokers are bootstrap host:port seeds for fetching. When empty they
	// are read from the broker registry /brokers/ids (cluster mode).
	Brokers []string
	// Security secures the connections: security.protocol, the TLS
	// configuration and SASL credentials (see SecurityFromProperties).
	// The zero value is PLAINTEXT.
	Security Security
	// ZooKeeperConnect is zookeeper.connect ("h1:2181,h2:2181/chroot").
	// Ignored when Coordinator is set; one of the two is required.
	ZooKeeperConnect string
	// ZooKeeperSessionTimeout is zookeeper.session.timeout.ms: how long a
	// dead consumer keeps its partitions. Default DefaultZooKeeperSession.
	ZooKeeperSessionTimeout time.Duration
	// Coordinator opens coordination sessions instead of ZooKeeperConnect,
	// e.g. on an in-process memcoord server.
	Coordinator coord.SessionFactory
	// AutoOffsetReset is auto.offset.reset: where a partition without a
	// committed offset (or with one out of range) starts: "largest"
	// (default) / "latest" or "smallest" / "earliest".
	AutoOffsetReset string
	// DisableAutoCommit is auto.commit.enable=false: offsets are then
	// committed only by CommitOffsets, rebalances and Close.
	DisableAutoCommit bool
	// AutoCommitInterval is auto.commit.interval.ms.
	AutoCommitInterval time.Duration
	// RebalanceMaxRetries is rebalance.max.retries: attempts per rebalance
	// before it fails with ErrRebalanceFailed.
	RebalanceMaxRetries int
	// RebalanceBackoff is rebalance.backoff.ms: the pause between attempts.
	// It also bounds how long a rebalance waits for messages the
	// application is handling to finish before committing.
	RebalanceBackoff time.Duration
	// QueuedMaxChunks is queued.max.message.chunks: fetched chunks (one
	// partition's records from one fetch) buffered per stream.
	QueuedMaxChunks int
	// FetchMaxWait is fetch.wait.max.ms.
	FetchMaxWait time.Duration
	// FetchMaxPartitionBytes is fetch.message.max.bytes.
	FetchMaxPartitionBytes int32
	// MetadataRefresh is how often partition counts are re-read from the
	// broker for topics without a /brokers/topics registry. Default
	// DefaultMetadataRefresh.
	MetadataRefresh time.Duration
	// ManualMark makes a message count as handled only when the application
	// marks it with GroupConsumer.MarkHandled, not when its loop body
	// returns: for applications that pass messages on asynchronously, such
	// as the mirror, which may commit only what its target acknowledged. A
	// rebalance (and Close) then waits, up to rebalance.backoff.ms, for the
	// messages handed out to be marked before it commits.
	ManualMark bool
	// Logger receives rebalance and session events; nil discards them.
	Logger *slog.Logger
}

// Validate checks the configuration.
func (c GroupConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.GroupID == "" {
		bad("group.id is required")
	} else if strings.Contains(c.GroupID, "/") {
		bad("group.id %q contains '/'", c.GroupID)
	}
	if strings.Contains(c.ConsumerID, "/") {
		bad("consumer.id %q contains '/'", c.ConsumerID)
	}
	if c.Coordinator == nil {
		if c.ZooKeeperConnect == "" {
			bad("zookeeper.connect is required")
		} else if _, _, err := zkcoord.ParseConnect(c.ZooKeeperConnect); err != nil {
			bad("zookeeper.connect: %v", err)
		}
	}
	if !validReset(c.AutoOffsetReset) {
		bad("auto.offset.reset: %q is not smallest/earliest or largest/latest", c.AutoOffsetReset)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"zookeeper.session.timeout.ms", c.ZooKeeperSessionTimeout},
		{"auto.commit.interval.ms", c.AutoCommitInterval},
		{"rebalance.backoff.ms", c.RebalanceBackoff},
		{"fetch.wait.max.ms", c.FetchMaxWait},
		{"metadata refresh", c.MetadataRefresh},
	} {
		if d.v < 0 {
			bad("%s: must be >= 0", d.name)
		}
	}
	if c.RebalanceMaxRetries < 0 {
		bad("rebalance.max.retries: must be >= 0")
	}
	if c.QueuedMaxChunks < 0 {
		bad("queued.max.message.chunks: must be >= 0")
	}
	if c.FetchMaxPartitionBytes < 0 {
		bad("fetch.message.max.bytes: must be >= 0")
	}
	return errors.Join(errs...)
}

func validReset(s string) bool {
	switch strings.ToLower(s) {
	case "", ResetLargest, "latest", ResetSmallest, "earliest":
		return true
	}
	return false
}

func orDuration(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}

func (c GroupConfig) resetSmallest() bool {
	switch strings.ToLower(c.AutoOffsetReset) {
	case ResetSmallest, "earliest":
		return true
	}
	return false
}

func (c GroupConfig) maxRetries() int {
	if c.RebalanceMaxRetries > 0 {
		return c.RebalanceMaxRetries
	}
	return DefaultRebalanceMaxRetries
}

func (c GroupConfig) queuedChunks() int {
	if c.QueuedMaxChunks > 0 {
		return c.QueuedMaxChunks
	}
	return DefaultQueuedMaxChunks
}

func (c GroupConfig) fetchPartitionBytes() int32 {
	if c.FetchMaxPartitionBytes > 0 {
		return c.FetchMaxPartitionBytes
	}
	return DefaultFetchMaxPartitionSize
}

// connector returns how sessions are opened.
func (c GroupConfig) connector(logger *slog.Logger) coord.SessionFactory {
	if c.Coordinator != nil {
		return c.Coordinator
	}
	connect, timeout := c.ZooKeeperConnect, orDuration(c.ZooKeeperSessionTimeout, DefaultZooKeeperSession)
	return func(ctx context.Context) (coord.Session, error) {
		return zkcoord.Connect(ctx, connect, zkcoord.Config{SessionTimeout: timeout, Logger: logger})
	}
}
