package broker

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/security"
)

// dynconfig.go holds the dynamic broker configs: the keys of
// /config/brokers/<default> (every broker) and /config/brokers/<id> (one
// broker, winning over the default), layered over server.properties. They
// are the broker defaults of the topic keys (log.retention.ms, ...,
// config.TopicKeys' broker synonyms) and the replication throttle rates.
// The reconciler resolves them from each metadata snapshot before the
// topics, so a change reaches every partition (a storage setting reopens
// its log) without a restart.

// dynamicSettings are the values dynamic configs can change.
type dynamicSettings struct {
	topic config.Topic
	// leaderRate and followerRate are leader.replication.throttled.rate and
	// follower.replication.throttled.rate in bytes/s; 0 is unthrottled.
	leaderRate, followerRate int64
	// alterLogDirsRate is replica.alter.log.dirs.io.max.bytes.per.second,
	// the bound on copying a replica between this broker's log.dirs
	// (alterreplicalogdirs.go); 0 is unthrottled. Kafka's reassignment
	// tool sets and clears it with the two rates above.
	alterLogDirsRate int64
	// server holds the other server.properties keys Kafka lets an
	// operator change at run time, in their static form: Limits'
	// max.connections, max.connections.per.ip and its overrides, and
	// Cleaner's threads, dedupe buffer, I/O rate and backoff. Only those
	// fields are set; serverKeys lists them.
	server config.Config
	// listenerTLS holds the listener.name.<l>.<key> values, by full name,
	// of security.ReconfigurableTLSKeys: a listener's new certificate.
	// Replaced on change, never modified.
	listenerTLS map[string]string
}

// dynamicKey is one broker config alterable at run time.
type dynamicKey struct {
	name         string
	typ          kmsg.ConfigType
	doc          string
	apply        func(d *dynamicSettings, v string) error
	value        func(d dynamicSettings) string
	kafkaDefault string
}

// kafkaUnlimitedRate is Kafka's default throttle rate (Long.MAX_VALUE).
const kafkaUnlimitedRate = math.MaxInt64

func rateKey(name, doc string, field func(d *dynamicSettings) *int64) dynamicKey {
	return dynamicKey{
		name: name, typ: kmsg.ConfigTypeLong, doc: doc,
		apply: func(d *dynamicSettings, v string) error {
			n, err := config.ParseLong(v, 1)
			if err != nil {
				return err
			}
			if n == kafkaUnlimitedRate {
				n = 0
			}
			*field(d) = n
			return nil
		},
		value: func(d dynamicSettings) string {
			if n := *field(&d); n > 0 {
				return strconv.FormatInt(n, 10)
			}
			return strconv.FormatInt(kafkaUnlimitedRate, 10)
		},
		kafkaDefault: strconv.FormatInt(kafkaUnlimitedRate, 10),
	}
}

// dynamicKeys are the broker configs alterable at run time; every other
// broker key is read-only (INVALID_CONFIG when altered). Built on first use.
var dynamicKeys = sync.OnceValue(func() []dynamicKey {
	var keys []dynamicKey
	for _, k := range config.TopicKeys() {
		// The controller reads unclean.leader.election.enable's broker
		// default from its own static config: not dynamic here.
		if k.BrokerKey == "" || k.BrokerKey == "unclean.leader.election.enable" {
			continue
		}
		keys = append(keys, dynamicKey{
			name: k.BrokerKey, typ: k.Type, doc: k.Doc,
			apply:        func(d *dynamicSettings, v string) error { return k.Apply(&d.topic, v) },
			value:        func(d dynamicSettings) string { return k.Value(d.topic) },
			kafkaDefault: k.KafkaDefault,
		})
	}
	keys = append(keys,
		rateKey("leader.replication.throttled.rate",
			"Bytes/s a leader sends to the out-of-sync followers of the replicas leader.replication.throttled.replicas names.",
			func(d *dynamicSettings) *int64 { return &d.leaderRate }),
		rateKey("follower.replication.throttled.rate",
			"Bytes/s a follower copies for the out-of-sync replicas follower.replication.throttled.replicas names.",
			func(d *dynamicSettings) *int64 { return &d.followerRate }),
		rateKey("replica.alter.log.dirs.io.max.bytes.per.second",
			"Bytes/s copied between log.dirs when a replica moves from one to another of this broker.",
			func(d *dynamicSettings) *int64 { return &d.alterLogDirsRate }),
	)
	return append(keys, serverKeys()...)
})

// serverKey is a server.properties key applied at run time: its static
// setter parses the value into dynamicSettings.server, value formats it as
// DescribeConfigs reports it.
func serverKey(name string, typ kmsg.ConfigType, kafkaDefault, doc string, value func(c config.Config) string) dynamicKey {
	return dynamicKey{
		name: name, typ: typ, doc: doc, kafkaDefault: kafkaDefault,
		apply: func(d *dynamicSettings, v string) error {
			if _, err := config.SetProperty(&d.server, name, v); err != nil {
				return err
			}
			return d.server.Limits.Validate()
		},
		value: func(d dynamicSettings) string { return value(d.server) },
	}
}

// kafkaMaxInt is Kafka's default of the connection limits (Int.MaxValue).
const kafkaMaxInt = "2147483647"

// serverKeys are the connection limits and the broker-wide cleaner keys,
// as Kafka's DynamicBrokerConfig and LogCleaner reconfigure them.
func serverKeys() []dynamicKey {
	limit := func(n int) string {
		if n <= 0 {
			return kafkaMaxInt
		}
		return strconv.Itoa(n)
	}
	return []dynamicKey{
		serverKey("max.connections", kmsg.ConfigTypeInt, kafkaMaxInt,
			"Connections the broker accepts at once; a new one beyond it is closed. Unset: the descriptor budget's share.",
			func(c config.Config) string { return limit(c.Limits.MaxConnections) }),
		serverKey("max.connections.per.ip", kmsg.ConfigTypeInt, kafkaMaxInt,
			"Connections accepted at once from one address.",
			func(c config.Config) string { return limit(c.Limits.MaxConnectionsPerIP) }),
		serverKey("max.connections.per.ip.overrides", kmsg.ConfigTypeString, "",
			"Per-host or per-address limits (host:n,...) that replace max.connections.per.ip.",
			func(c config.Config) string { return formatPerIPOverrides(c.Limits.MaxConnectionsPerIPOverrides) }),
		serverKey("log.cleaner.threads", kmsg.ConfigTypeInt, strconv.Itoa(config.DefaultCleanerThreads),
			"Log cleaner threads.",
			func(c config.Config) string { return strconv.Itoa(c.Cleaner.WithDefaults().Threads) }),
		serverKey("log.cleaner.dedupe.buffer.size", kmsg.ConfigTypeLong, strconv.Itoa(config.DefaultCleanerDedupeBufferSize),
			"Bytes of offset map shared by the cleaner threads.",
			func(c config.Config) string { return strconv.FormatInt(c.Cleaner.WithDefaults().DedupeBufferSize, 10) }),
		serverKey("log.cleaner.io.max.bytes.per.second", kmsg.ConfigTypeDouble, kafkaMaxDouble,
			"Bytes/s the cleaner threads read and write together.",
			func(c config.Config) string {
				if f := c.Cleaner.IOMaxBytesPerSecond; f > 0 {
					return strconv.FormatFloat(f, 'f', -1, 64)
				}
				return kafkaMaxDouble
			}),
		serverKey("log.cleaner.backoff.ms", kmsg.ConfigTypeLong, strconv.FormatInt(config.DefaultCleanerBackoff.Milliseconds(), 10),
			"The cleaner's pause when no log needs cleaning.",
			func(c config.Config) string {
				return strconv.FormatInt(c.Cleaner.WithDefaults().Backoff.Milliseconds(), 10)
			}),
	}
}

// kafkaMaxDouble is Kafka's default I/O rate (Double.MaxValue), as Java
// prints it.
const kafkaMaxDouble = "1.7976931348623157E308"

// formatPerIPOverrides is max.connections.per.ip.overrides as Kafka writes
// it, sorted.
func formatPerIPOverrides(m map[string]int) string {
	var parts []string
	for _, host := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, host+":"+strconv.Itoa(m[host]))
	}
	return strings.Join(parts, ",")
}

func findDynamicKey(name string) (dynamicKey, bool) {
	keys := dynamicKeys()
	i := slices.IndexFunc(keys, func(k dynamicKey) bool { return k.name == name })
	if i < 0 {
		if _, _, ok := parseListenerTLSKey(name); ok {
			return listenerTLSKey(name), true
		}
		return dynamicKey{}, false
	}
	return keys[i], true
}

// parseListenerTLSKey splits listener.name.<l>.<key>, key one of
// security.ReconfigurableTLSKeys.
func parseListenerTLSKey(name string) (listener, key string, ok bool) {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	i := strings.Index(rest, ".ssl.")
	if !ok || i <= 0 {
		return "", "", false
	}
	listener, key = rest[:i], rest[i+1:]
	if listener != strings.ToLower(listener) || !slices.Contains(security.ReconfigurableTLSKeys, key) {
		return "", "", false
	}
	return listener, key, true
}

// listenerTLSKey is the dynamic key of one listener's TLS setting.
func listenerTLSKey(name string) dynamicKey {
	return dynamicKey{
		name: name, typ: kmsg.ConfigTypeString,
		doc: "A TLS setting of one listener, reloaded without a restart: new connections get the new certificate.",
		apply: func(d *dynamicSettings, v string) error {
			m := maps.Clone(d.listenerTLS)
			if m == nil {
				m = map[string]string{}
			}
			m[name] = v
			d.listenerTLS = m
			return nil
		},
		value: func(d dynamicSettings) string { return d.listenerTLS[name] },
	}
}

// listenerTLSWith is listener's static TLS with the dynamic values of
// configs (full key names) over it.
func (b *Broker) listenerTLSWith(listener string, configs map[string]string) security.ServerTLS {
	s := b.cfg.TLSFor(listener)
	prefix := security.ListenerPrefix(listener)
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		if key, ok := strings.CutPrefix(name, prefix); ok {
			s, _ = s.WithKey(key, configs[name])
		}
	}
	return s
}

// checkListenerTLS refuses listener TLS keys at the cluster-default level
// (a certificate is one broker's, as in Kafka) and, for this broker's own
// entity, a listener that is not one of its TLS listeners or a key pair
// and trust that do not load.
func (b *Broker) checkListenerTLS(entity string, configs map[string]string) (*kerr.Error, string) {
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		listener, _, ok := parseListenerTLSKey(name)
		switch {
		case !ok:
			continue
		case entity == cluster.DefaultBrokerEntity:
			return kerr.InvalidConfig, "Cannot update these configs at default cluster level, broker id must be specified: " + name
		case entity != strconv.Itoa(int(b.cfg.BrokerID)):
			continue
		}
		l := b.listenerLower(listener)
		if l == nil || l.tls == nil {
			return kerr.InvalidConfig, fmt.Sprintf("%s: broker %d has no TLS listener %s", name, b.cfg.BrokerID, listener)
		}
		if _, err := security.NewServer(b.listenerTLSWith(l.name, configs), nil); err != nil {
			return kerr.InvalidConfig, fmt.Sprintf("Validation of dynamic config update of SSLFactory failed: %s: %v", name, err)
		}
	}
	return nil, ""
}

// listenerLower returns the bound listener whose lower-cased name is
// lower (as listener.name.<l>. writes it), or nil.
func (b *Broker) listenerLower(lower string) *listener {
	for _, l := range b.listeners {
		if strings.ToLower(l.name) == lower {
			return l
		}
	}
	return nil
}

// dynamicConfig is the effective dynamic configuration of this broker.
type dynamicConfig struct {
	static   dynamicSettings
	defaults map[string]string // /config/brokers/<default>, validated
	own      map[string]string // /config/brokers/<id>, validated
	settings dynamicSettings
}

// dynamic returns the current dynamic configuration (the static one until
// the first reconciliation).
func (b *Broker) dynamic() *dynamicConfig {
	if d := b.dyn.Load(); d != nil {
		return d
	}
	d := &dynamicConfig{static: b.staticSettings()}
	d.settings = d.static
	return d
}

func (b *Broker) staticSettings() dynamicSettings {
	return dynamicSettings{topic: b.cfg.TopicDefaults(), server: config.Config{Limits: b.cfg.Limits, Cleaner: b.cfg.Cleaner}}
}

// topicDefaults is what a topic without overrides gets: the broker's log.*
// settings with the dynamic broker configs applied.
func (b *Broker) topicDefaults() config.Topic { return b.dynamic().settings.topic }

// resolveDynamicConfig layers the entities' configs over the static ones.
// An entity whose configs do not validate (written by another tool) is
// ignored with a warning, once per distinct error. Reconciler-owned.
func (b *Broker) resolveDynamicConfig(snap cluster.Snapshot) {
	d := &dynamicConfig{static: b.staticSettings()}
	d.settings = d.static
	for _, entity := range []string{cluster.DefaultBrokerEntity, strconv.Itoa(int(b.cfg.BrokerID))} {
		configs := snap.BrokerConfigs[entity]
		next, err := applyDynamic(d.settings, configs)
		if b.badDynamic == nil {
			b.badDynamic = map[string]string{}
		}
		if err != nil {
			if b.badDynamic[entity] != err.Error() {
				b.badDynamic[entity] = err.Error()
				b.logger.Warn("ignoring dynamic broker configs", "entity", entity, "err", err)
			}
			continue
		}
		delete(b.badDynamic, entity)
		d.settings = next
		if entity == cluster.DefaultBrokerEntity {
			d.defaults = configs
		} else {
			d.own = configs
		}
	}
	if old := b.dyn.Load(); old != nil && (!maps.Equal(old.defaults, d.defaults) || !maps.Equal(old.own, d.own)) {
		b.logger.Info("dynamic broker configs applied", "default", d.defaults, "broker", d.own)
	}
	b.dyn.Store(d)
	b.throttle.setRates(d.settings.leaderRate, d.settings.followerRate)
	b.applyServerSettings(d.settings)
}

// applyServerSettings hands the run-time server.properties keys to their
// owners: the connection limiter and the log cleaner. Each ignores values
// it already has.
func (b *Broker) applyServerSettings(s dynamicSettings) {
	c := s.server
	if b.res != nil {
		lc := c.Limits.WithDefaults()
		max := b.res.budget.conns
		if lc.MaxConnections > 0 {
			max = lc.MaxConnections
		}
		b.res.conns.setLimits(max, lc.MaxConnectionsPerIP, lc.MaxConnectionsPerIPOverrides)
	}
	if lc := b.cleaner.Load(); lc != nil {
		lc.reconfigure(c.Cleaner)
	}
	for _, l := range b.listeners {
		if l.tls == nil {
			continue
		}
		prefix := security.ListenerPrefix(l.name)
		own := maps.Collect(func(yield func(string, string) bool) {
			for k, v := range s.listenerTLS {
				if strings.HasPrefix(k, prefix) && !yield(k, v) {
					return
				}
			}
		})
		if maps.Equal(own, l.dynamicTLS) {
			continue
		}
		l.dynamicTLS = own
		if err := l.tls.Update(b.listenerTLSWith(l.name, own)); err != nil {
			b.logger.Error("new listener TLS settings refused; keeping the old ones", "listener", l.name, "configs", own, "err", err)
			continue
		}
		attrs := []any{"listener", l.name, "configs", own}
		if leaf := l.tls.Leaf().Leaf; leaf != nil {
			attrs = append(attrs, "subject", leaf.Subject.String(), "serial", leaf.SerialNumber.String(), "not_after", leaf.NotAfter)
		}
		b.logger.Info("listener TLS settings updated", attrs...)
	}
}

// applyDynamic applies configs to s; the error names the key, in Kafka's
// words.
func applyDynamic(s dynamicSettings, configs map[string]string) (dynamicSettings, error) {
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		k, ok := findDynamicKey(name)
		if !ok {
			return s, fmt.Errorf("%w: %s", errNotDynamic, name)
		}
		v := configs[name]
		if err := k.apply(&s, v); err != nil {
			return s, fmt.Errorf("Invalid value %s for configuration %s: %v", v, name, err)
		}
	}
	return s, nil
}

// errNotDynamic is an unknown or read-only broker key in an alteration.
var errNotDynamic = fmt.Errorf("Cannot update these configs dynamically")

// brokerEntity maps a BROKER resource name to its /config/brokers entity:
// the empty name is the cluster-wide default.
func brokerEntity(name string) (string, *kerr.Error, string) {
	if name == "" {
		return cluster.DefaultBrokerEntity, nil, ""
	}
	if !cluster.ValidBrokerEntity(name) {
		return "", kerr.InvalidRequest, "broker resource name " + name + " is neither empty nor a broker id"
	}
	return name, nil, ""
}

// applyBrokerConfigOps changes an entity's dynamic configs in place and
// validates the result over the static settings (INVALID_CONFIG names the
// key); append and subtract apply to no broker key we have.
func applyBrokerConfigOps(static dynamicSettings, configs map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (*kerr.Error, string) {
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Name] {
			return kerr.InvalidRequest, "config " + op.Name + " is altered more than once"
		}
		seen[op.Name] = true
		if _, ok := findDynamicKey(op.Name); !ok {
			if strings.HasPrefix(op.Name, "listener.name.") && strings.HasSuffix(op.Name, ".password") {
				return kerr.InvalidConfig, op.Name + ": dynamic password configs are not supported (Kafka keeps them " +
					"encrypted with password.encoder.secret); use a keystore without a password or replace the file in place"
			}
			return kerr.InvalidConfig, errNotDynamic.Error() + ": " + op.Name
		}
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.Value == nil {
				return kerr.InvalidConfig, "Null value not supported for broker configs: " + op.Name
			}
			configs[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(configs, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			return kerr.InvalidConfig, "Config value append or subtract is not allowed for config key: " + op.Name
		default:
			return kerr.InvalidRequest, fmt.Sprintf("unknown config operation %d for %s", op.Op, op.Name)
		}
	}
	if _, err := applyDynamic(static, configs); err != nil {
		return kerr.InvalidConfig, err.Error()
	}
	return nil, ""
}

// alterBrokerConfigs applies ops to the entity of the BROKER resource name
// (with replace, to none: the legacy AlterConfigs) and, unless
// validateOnly, writes them through the cluster.
func (b *Broker) alterBrokerConfigs(ctx context.Context, name string,
	ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, replace, validateOnly bool,
) (*kerr.Error, string) {
	entity, code, msg := brokerEntity(name)
	if code != nil {
		return code, msg
	}
	static := b.staticSettings()
	if validateOnly {
		current := map[string]string{}
		if !replace {
			maps.Copy(current, b.metadata().BrokerConfigs[entity])
		}
		if code, msg := applyBrokerConfigOps(static, current, ops); code != nil {
			return code, msg
		}
		return b.checkListenerTLS(entity, current)
	}
	written, err := b.member.UpdateBrokerConfigs(ctx, entity, func(configs map[string]string) error {
		if replace {
			clear(configs)
		}
		if code, msg = applyBrokerConfigOps(static, configs, ops); code != nil {
			return errConfigRejected
		}
		if code, msg = b.checkListenerTLS(entity, configs); code != nil {
			return errConfigRejected
		}
		return nil
	})
	switch {
	case code != nil:
		return code, msg
	case err != nil:
		return adminError(err), err.Error()
	}
	b.logger.Info("dynamic broker configs altered", "entity", entity, "configs", written)
	return nil, ""
}

// dynamicSynonyms lists where a dynamic key's value may come from, most
// specific first, as Kafka's DescribeConfigs synonyms: this broker's
// override, the cluster default, server.properties (or Kafka's default).
func (d *dynamicConfig) synonyms(k dynamicKey) []configSynonym {
	var out []configSynonym
	if v, ok := d.own[k.name]; ok {
		out = append(out, configSynonym{k.name, v, kmsg.ConfigSourceDynamicBrokerConfig})
	}
	if v, ok := d.defaults[k.name]; ok {
		out = append(out, configSynonym{k.name, v, kmsg.ConfigSourceDynamicDefaultBrokerConfig})
	}
	v := k.value(d.static)
	src := kmsg.ConfigSourceStaticBrokerConfig
	if v == k.kafkaDefault {
		src = kmsg.ConfigSourceDefaultConfig
	}
	return append(out, configSynonym{k.name, v, src})
}

// entry is k as DescribeConfigs reports it for this broker.
func (d *dynamicConfig) entry(k dynamicKey) configEntry {
	syn := d.synonyms(k)
	return configEntry{name: k.name, value: k.value(d.settings), source: syn[0].source, typ: k.typ, doc: k.doc, synonyms: syn}
}

// listenerTLSEntries are the listener TLS keys set for this broker or as
// the cluster default (dynamicKeys does not list them: their names hold a
// listener's).
func (d *dynamicConfig) listenerTLSEntries() []configEntry {
	names := map[string]bool{}
	for _, m := range []map[string]string{d.own, d.defaults} {
		for name := range m {
			if _, _, ok := parseListenerTLSKey(name); ok {
				names[name] = true
			}
		}
	}
	var out []configEntry
	for _, name := range slices.Sorted(maps.Keys(names)) {
		out = append(out, d.entry(listenerTLSKey(name)))
	}
	return out
}

// defaultEntries are the configs of the cluster-wide default entity (the
// empty BROKER name): only those set, as Kafka reports them.
func (b *Broker) defaultEntries() []configEntry {
	d := b.dynamic()
	var out []configEntry
	for _, name := range slices.Sorted(maps.Keys(d.defaults)) {
		k, _ := findDynamicKey(name)
		v := d.defaults[name]
		out = append(out, configEntry{name: name, value: v, source: kmsg.ConfigSourceDynamicDefaultBrokerConfig, typ: k.typ, doc: k.doc,
			synonyms: []configSynonym{{name, v, kmsg.ConfigSourceDynamicDefaultBrokerConfig}}})
	}
	return out
}

// isDynamicKey reports whether a broker key is alterable at run time.
func isDynamicKey(name string) bool {
	_, ok := findDynamicKey(name)
	return ok
}
