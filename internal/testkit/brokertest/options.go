package brokertest

import (
	"log/slog"

	"github.com/tributary/tributary/broker"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/coord"
)

// Option adjusts a fixture; New and NewCluster take the same options.
type Option func(*options)

type options struct {
	tweaks     []func(*config.Config)
	partitions int32
	zkFresh    bool
	zkConnect  string
	connect    coord.SessionFactory
	logger     *slog.Logger
	brokerOpts []broker.Option
}

// Config adjusts each broker's configuration after the fixture filled in
// its own fields (id, listener, log dir, coordination); several apply in
// order.
func Config(tweak func(*config.Config)) Option {
	return func(o *options) { o.tweaks = append(o.tweaks, tweak) }
}

// Partitions is num.partitions, the partition count of auto-created
// topics; default config.DefaultNumPartitions.
func Partitions(n int32) Option { return func(o *options) { o.partitions = n } }

// NoAutoCreate turns auto.create.topics.enable off.
func NoAutoCreate() Option {
	return Config(func(c *config.Config) { c.DisableAutoCreateTopics = true })
}

// ZooKeeper registers the brokers in a fresh chroot of the test ZooKeeper
// (TRIBUTARY_TEST_ZK), removed when the test ends; the test fails if there
// is none.
func ZooKeeper() Option { return func(o *options) { o.zkFresh = true } }

// ZooKeeperConnect registers the brokers under connect, a
// zookeeper.connect string with the chroot the test made.
func ZooKeeperConnect(connect string) Option { return func(o *options) { o.zkConnect = connect } }

// Coordinator makes the brokers join through connect, a coordination
// service the test also gives its group members.
func Coordinator(connect coord.SessionFactory) Option {
	return func(o *options) { o.connect = connect }
}

// Logger receives the brokers' logs (each line with its broker.id); by
// default testenv.Logger at warning level: the test log, everything with
// TRIBUTARY_TEST_DEBUG=1.
func Logger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// BrokerOptions passes opts to broker.New for every broker.
func BrokerOptions(opts ...broker.Option) Option {
	return func(o *options) { o.brokerOpts = append(o.brokerOpts, opts...) }
}
