package proccluster

import (
	"maps"
	"slices"
)

// Option adjusts a Cluster before its first broker starts.
type Option func(*options)

type options struct {
	brokers   int
	connect   string
	props     map[string]string
	listeners []string
	overrides map[string]string
}

// Brokers is the number of brokers New starts, with ids 1..n; default 3.
// With zero New starts none and the test starts them with Start, ids from
// 1 up.
func Brokers(n int) Option { return func(o *options) { o.brokers = n } }

// ZooKeeperConnect registers the brokers under connect, a
// zookeeper.connect string with the chroot the test made; by default New
// makes a fresh chroot of the test ZooKeeper (TRIBUTARY_TEST_ZK).
func ZooKeeperConnect(connect string) Option { return func(o *options) { o.connect = connect } }

// Properties sets props in every broker's properties file, over the
// fixture's base properties (log.dirs and zookeeper.session.timeout.ms
// too); several apply in order. The fixture keeps listeners its own: see
// Listener.
func Properties(props map[string]string) Option {
	return func(o *options) { maps.Copy(o.props, props) }
}

// Listener adds a listener named name on 127.0.0.1 (a free port, kept
// across restarts) after the PLAINTEXT one, the listener whose address
// Addr reports. The properties that give it a protocol
// (listener.security.protocol.map, ...) are the test's, through
// Properties.
func Listener(name string) Option {
	return func(o *options) { o.listeners = append(o.listeners, name) }
}

// Overrides passes props to every broker on its command line, one
// `--override key=value` each (sorted by key), so that they win over the
// properties file; several apply in order.
func Overrides(props map[string]string) Option {
	return func(o *options) { maps.Copy(o.overrides, props) }
}

// args is the --override arguments of o.overrides, sorted by key.
func (o *options) args() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(o.overrides)) {
		out = append(out, "--override", k+"="+o.overrides[k])
	}
	return out
}
