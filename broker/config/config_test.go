package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseProperties(t *testing.T) {
	in := `# a stock-looking server.properties
broker.id=3
listeners=PLAINTEXT://127.0.0.1:9093
advertised.listeners = PLAINTEXT://broker3.example:9093
log.dirs=/data/a, /data/b
num.partitions: 6
auto.create.topics.enable=false
log.segment.bytes=1048576
log.retention.hours=24
log.retention.minutes=90
log.retention.bytes=-1
log.roll.hours=1
log.flush.interval.messages=9223372036854775807
log.flush.interval.ms=1000
producer.id.expiration.ms=3600000
message.max.bytes=2000000
socket.request.max.bytes=4194304
metrics.listen=127.0.0.1:0
num.network.threads=3
! another comment style
log.index.interval.bytes \
   = 8192
mystery.key=1
`
	cfg, warnings, err := ParseProperties(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		BrokerID: 3, Listeners: "PLAINTEXT://127.0.0.1:9093", AdvertisedListeners: "PLAINTEXT://broker3.example:9093",
		LogDirs: []string{"/data/a", "/data/b"}, NumPartitions: 6, DisableAutoCreateTopics: true,
		SegmentBytes: 1 << 20, Retention: 90 * time.Minute, RetentionBytes: -1, SegmentMs: time.Hour,
		FlushIntervalMessages: 0, FlushInterval: time.Second, MessageMaxBytes: 2000000,
		SocketRequestMaxBytes: 4 << 20, MetricsListen: "127.0.0.1:0", IndexIntervalBytes: 8192,
		ProducerIDExpiration: time.Hour,
	}
	if got, w := strings.Join(cfg.LogDirs, ","), strings.Join(want.LogDirs, ","); got != w {
		t.Fatalf("log.dirs %q, want %q", got, w)
	}
	cfg.LogDirs, want.LogDirs = nil, nil
	if !configEqual(cfg, want) {
		t.Fatalf("config\n got %+v\nwant %+v", cfg, want)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "mystery.key") {
		t.Fatalf("warnings %q, want one for mystery.key", warnings)
	}
}

func configEqual(a, b Config) bool {
	a.LogDirs, b.LogDirs = nil, nil
	return a.BrokerID == b.BrokerID && a.Listeners == b.Listeners && a.AdvertisedListeners == b.AdvertisedListeners &&
		a.NumPartitions == b.NumPartitions && a.DisableAutoCreateTopics == b.DisableAutoCreateTopics &&
		a.SegmentBytes == b.SegmentBytes && a.SegmentMs == b.SegmentMs && a.Retention == b.Retention &&
		a.RetentionBytes == b.RetentionBytes && a.RetentionCheckInterval == b.RetentionCheckInterval &&
		a.FlushIntervalMessages == b.FlushIntervalMessages && a.FlushInterval == b.FlushInterval &&
		a.IndexIntervalBytes == b.IndexIntervalBytes && a.MessageMaxBytes == b.MessageMaxBytes &&
		a.SocketRequestMaxBytes == b.SocketRequestMaxBytes && a.MetricsListen == b.MetricsListen &&
		a.ProducerIDExpiration == b.ProducerIDExpiration
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct{ props, key string }{
		{"log.dirs=x\nnum.partitions=zero", "num.partitions"},
		{"log.dirs=x\nnum.partitions=0", "num.partitions"},
		{"log.dirs=x\nbroker.id=-1", "broker.id"},
		{"log.dirs=x\nlisteners=SSL://h:1", "listeners"},
		{"log.dirs=x\nlisteners=PLAINTEXT://a:1,PLAINTEXT://b:2", "listeners"},
		{"log.dirs=x\nadvertised.listeners=PLAINTEXT://h:0", "advertised.listeners"},
		{"log.dirs=x\nlog.segment.bytes=10", "log.segment.bytes"},
		{"log.dirs=x\nlog.segment.bytes=4294967296", "log.segment.bytes"},
		{"log.dirs=x\nlog.retention.hours=soon", "log.retention.hours"},
		{"log.dirs=x\nauto.create.topics.enable=maybe", "auto.create.topics.enable"},
		{"log.dirs=x\nlog.flush.interval.ms=-1", "log.flush.interval.ms"},
		{"log.dirs=x\nsocket.request.max.bytes=10", "socket.request.max.bytes"},
		{"log.dirs=x\nmetrics.listen=nonsense", "metrics.listen"},
		{"num.partitions=1", "log.dirs"},
		{"log.dirs= , ", "log.dirs"},
		// A given 0 is taken literally, never as the default.
		{"log.dirs=x\nlog.segment.bytes=0", "log.segment.bytes"},
		{"log.dirs=x\nmessage.max.bytes=0", "message.max.bytes"},
		{"log.dirs=x\nproducer.id.expiration.ms=0", "producer.id.expiration.ms"},
		{"log.dirs=x\nmax.connections=0", "max.connections"},
		{"log.dirs=x\nleader.imbalance.check.interval.seconds=0", "leader.imbalance.check.interval.seconds"},
		// Kafka's booleans, not strconv's.
		{"log.dirs=x\nauto.create.topics.enable=1", "auto.create.topics.enable"},
		{"log.dirs=x\nunclean.leader.election.enable=T", "unclean.leader.election.enable"},
		// Overridden unit variants are checked too.
		{"log.dirs=x\nlog.retention.ms=1000\nlog.retention.hours=soon", "log.retention.hours"},
		{"log.dirs=x\nbad=\\u12", "line 2"},
	} {
		_, _, err := ParseProperties(strings.NewReader(tc.props))
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%q: error %v, want ErrInvalidConfig naming %s", tc.props, err, tc.key)
		}
	}
}

// TestConfigErrorsAllAtOnce: every bad value is named, not only the first.
func TestConfigErrorsAllAtOnce(t *testing.T) {
	_, _, err := ParseProperties(strings.NewReader("log.dirs=x\nnum.partitions=0\nbroker.id=x\nlog.roll.ms=0\n"))
	for _, key := range []string{"num.partitions", "broker.id", "log.roll.ms"} {
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), key) {
			t.Errorf("error %v does not name %s", err, key)
		}
	}
}

func TestConfigDefaultsAndUnlimitedRetention(t *testing.T) {
	cfg, _, err := ParseProperties(strings.NewReader("log.dir=/d\nlog.retention.ms=-1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Retention >= 0 {
		t.Fatalf("log.retention.ms=-1 gave %v, want negative (unlimited)", cfg.Retention)
	}
	d := Config{LogDirs: []string{"/d"}}.WithDefaults()
	if d.Listeners != DefaultListeners || d.NumPartitions != 1 || d.SegmentBytes != 1<<30 ||
		d.MessageMaxBytes != DefaultMessageMaxBytes || d.Retention != 7*24*time.Hour {
		t.Fatalf("defaults %+v", d)
	}
	if err := (Config{LogDirs: []string{"/d"}}).Validate(); err != nil {
		t.Fatalf("zero config with a log dir: %v", err)
	}
}

func TestClusterKeys(t *testing.T) {
	c, warnings, err := ParseProperties(strings.NewReader("log.dirs=x\nzookeeper.connect=h1:2181,h2:2181/tributary\n" +
		"zookeeper.session.timeout.ms=6000\ndefault.replication.factor=1\n"))
	if err != nil || len(warnings) != 0 {
		t.Fatalf("ParseProperties: %v %v", err, warnings)
	}
	c = c.WithDefaults()
	if c.ZooKeeperConnect != "h1:2181,h2:2181/tributary" || c.ZooKeeperSessionTimeout != 6*time.Second ||
		c.ZooKeeperConnectionTimeout != 6*time.Second || c.DefaultReplicationFactor != 1 {
		t.Fatalf("cluster keys: %+v", c)
	}
	if d := (Config{LogDirs: []string{"x"}}).WithDefaults(); d.ZooKeeperSessionTimeout != DefaultZooKeeperSession ||
		d.ZooKeeperConnectionTimeout != DefaultZooKeeperSession {
		t.Fatalf("defaults: session %v connection %v", d.ZooKeeperSessionTimeout, d.ZooKeeperConnectionTimeout)
	}
	for _, bad := range []struct{ props, key string }{
		{"log.dirs=x\nzookeeper.connect=h:2181/bad//chroot", "zookeeper.connect"},
		{"log.dirs=x\nzookeeper.session.timeout.ms=0", "zookeeper.session.timeout.ms"},
		{"log.dirs=x\nzookeeper.connection.timeout.ms=soon", "zookeeper.connection.timeout.ms"},
		{"log.dirs=x\ndefault.replication.factor=0", "default.replication.factor"},
		{"log.dirs=x\nmin.insync.replicas=0", "min.insync.replicas"},
		{"log.dirs=x\nreplica.lag.time.max.ms=1000\nreplica.fetch.wait.max.ms=2000", "replica.fetch.wait.max.ms"},
		{"log.dirs=x\nunclean.leader.election.enable=maybe", "unclean.leader.election.enable"},
	} {
		_, _, err := ParseProperties(strings.NewReader(bad.props))
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), bad.key) {
			t.Errorf("%q: error %v, want one naming %s", bad.props, err, bad.key)
		}
	}
}
