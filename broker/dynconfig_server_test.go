package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/pki"
	"github.com/tributary/tributary/internal/security"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// setDefaultBrokerConfig sets (value non-nil) or deletes a key of the
// cluster-wide dynamic default with IncrementalAlterConfigs and waits
// until the broker has applied it.
func setDefaultBrokerConfig(t *testing.T, ctx context.Context, b *testBroker, adm *kadm.Client, key string, value *string) {
	t.Helper()
	op := kadm.SetConfig
	if value == nil {
		op = kadm.DeleteConfig
	}
	if err := alterBroker(ctx, adm, kadm.AlterConfig{Op: op, Name: key, Value: value}); err != nil {
		t.Fatalf("altering %s: %v", key, err)
	}
	testenv.WaitFor(t, 30*time.Second, "the broker applying "+key, func() (bool, string) {
		v, ok := b.dynamic().defaults[key]
		if value == nil {
			return !ok, v
		}
		return ok && v == *value, v
	})
}

// alterBroker sends one IncrementalAlterConfigs alteration for the
// brokers ids (none: the cluster-wide default) and returns its error.
func alterBroker(ctx context.Context, adm *kadm.Client, cfg kadm.AlterConfig, ids ...int32) error {
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{cfg}, ids...)
	if err == nil {
		err = res[0].Err
	}
	return err
}

// TestDynamicConnectionLimits: max.connections.per.ip.overrides,
// max.connections.per.ip and max.connections set as dynamic broker configs
// bound the next connections at once (each over its limit is closed and
// counted under the limit's name); connections already open stay; deleting
// the keys lifts the limits. Connections come from distinct loopback
// addresses so that the admin client's own are not in the count.
func TestDynamicConnectionLimits(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := testenv.Context(t, 2*time.Minute)
	adm := kadm.NewClient(newClient(t, b.Addr()))
	refused := func(limit string) float64 {
		return counterValue(t, b.reg, "tributary_broker_connections_refused_total", map[string]string{"limit": limit})
	}

	setDefaultBrokerConfig(t, ctx, b, adm, "max.connections.per.ip.overrides", kadm.StringPtr("127.0.0.2:2"))
	for range 2 {
		apiVersionsOK(t, dialFrom(t, b.Addr(), "127.0.0.2"))
	}
	dialFrom(t, b.Addr(), "127.0.0.2").expectClosed()
	if n := refused("max.connections.per.ip"); n != 1 {
		t.Fatalf("refused per IP: %v, want 1", n)
	}
	apiVersionsOK(t, dialFrom(t, b.Addr(), "127.0.0.3"))

	// A higher override lets one more in.
	setDefaultBrokerConfig(t, ctx, b, adm, "max.connections.per.ip.overrides", kadm.StringPtr("127.0.0.1:1000,127.0.0.2:3"))
	apiVersionsOK(t, dialFrom(t, b.Addr(), "127.0.0.2"))
	dialFrom(t, b.Addr(), "127.0.0.2").expectClosed()

	// max.connections.per.ip for the addresses without an override:
	// 127.0.0.3 has one already.
	setDefaultBrokerConfig(t, ctx, b, adm, "max.connections.per.ip", kadm.StringPtr("2"))
	apiVersionsOK(t, dialFrom(t, b.Addr(), "127.0.0.3"))
	dialFrom(t, b.Addr(), "127.0.0.3").expectClosed()
	if n := refused("max.connections.per.ip"); n != 3 {
		t.Fatalf("refused per IP: %v, want 3", n)
	}

	// max.connections: one more than are open now.
	b.res.conns.mu.Lock()
	open := b.res.conns.total
	b.res.conns.mu.Unlock()
	setDefaultBrokerConfig(t, ctx, b, adm, "max.connections", kadm.StringPtr(fmt.Sprint(open+1)))
	apiVersionsOK(t, dialFrom(t, b.Addr(), "127.0.0.4"))
	dialFrom(t, b.Addr(), "127.0.0.5").expectClosed()
	if n := refused("max.connections"); n != 1 {
		t.Fatalf("refused by max.connections: %v, want 1", n)
	}

	for _, k := range []string{"max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides"} {
		setDefaultBrokerConfig(t, ctx, b, adm, k, nil)
	}
	for range 3 {
		apiVersionsOK(t, dialFrom(t, b.Addr(), "127.0.0.2"))
		apiVersionsOK(t, dialFrom(t, b.Addr(), "127.0.0.3"))
	}

	// Bad values name the key and change nothing.
	for k, v := range map[string]string{"max.connections": "-1", "max.connections.per.ip": "many",
		"max.connections.per.ip.overrides": "127.0.0.2:-4"} {
		if err := alterBroker(ctx, adm, kadm.AlterConfig{Name: k, Value: kadm.StringPtr(v)}); !errors.Is(err, kerr.InvalidConfig) {
			t.Fatalf("%s=%s: %v, want INVALID_CONFIG", k, v, err)
		}
	}
	if d := b.dynamic().defaults; len(d) != 0 {
		t.Fatalf("refused alterations left %v", d)
	}
}

// TestDynamicCleanerConfigs: log.cleaner.threads, .io.max.bytes.per.second,
// .dedupe.buffer.size and .backoff.ms as dynamic broker configs resize and
// retune the running cleaner: more threads start, the ones beyond a
// lowered count stop, the shared I/O throttle and each thread's share of
// the dedupe buffer follow.
func TestDynamicCleanerConfigs(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) { c.Cleaner.Backoff = 50 * time.Millisecond })
	ctx := testenv.Context(t, 2*time.Minute)
	adm := kadm.NewClient(newClient(t, b.Addr()))
	c := b.cleaner.Load()
	if c == nil {
		t.Fatal("no cleaner running")
	}
	state := func() (running int, rate float64, share int64, backoff time.Duration) {
		c.mu.Lock()
		running = len(c.running)
		c.mu.Unlock()
		c.throttle.mu.Lock()
		rate = c.throttle.rate
		c.throttle.mu.Unlock()
		opts, backoff, _ := c.options(0)
		return running, rate, opts.DedupeBufferSize, backoff
	}
	if n, _, _, _ := state(); n != 1 {
		t.Fatalf("%d cleaner threads at start, want 1", n)
	}

	setDefaultBrokerConfig(t, ctx, b, adm, "log.cleaner.threads", kadm.StringPtr("3"))
	setDefaultBrokerConfig(t, ctx, b, adm, "log.cleaner.io.max.bytes.per.second", kadm.StringPtr("1000000"))
	setDefaultBrokerConfig(t, ctx, b, adm, "log.cleaner.dedupe.buffer.size", kadm.StringPtr(fmt.Sprint(30<<20)))
	setDefaultBrokerConfig(t, ctx, b, adm, "log.cleaner.backoff.ms", kadm.StringPtr("70"))
	if n, rate, share, backoff := state(); n != 3 || rate != 1e6 || share != 10<<20 || backoff != 70*time.Millisecond {
		t.Fatalf("after the alterations: %d threads, %v B/s, %d B of buffer a thread, backoff %v; want 3, 1e6, %d, 70ms",
			n, rate, share, backoff, 10<<20)
	}

	setDefaultBrokerConfig(t, ctx, b, adm, "log.cleaner.threads", kadm.StringPtr("2"))
	testenv.WaitFor(t, 30*time.Second, "the third cleaner thread stopping", func() (bool, string) {
		n, _, _, _ := state()
		return n == 2, fmt.Sprint(n, " running")
	})
	for _, k := range []string{"log.cleaner.threads", "log.cleaner.io.max.bytes.per.second", "log.cleaner.dedupe.buffer.size", "log.cleaner.backoff.ms"} {
		setDefaultBrokerConfig(t, ctx, b, adm, k, nil)
	}
	testenv.WaitFor(t, 30*time.Second, "the static cleaner settings back", func() (bool, string) {
		n, rate, share, backoff := state()
		return n == 1 && rate == 0 && share == config.DefaultCleanerDedupeBufferSize && backoff == 50*time.Millisecond,
			fmt.Sprint(n, rate, share, backoff)
	})

	if err := alterBroker(ctx, adm, kadm.AlterConfig{Name: "log.cleaner.threads", Value: kadm.StringPtr("0")}); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("log.cleaner.threads=0: %v, want INVALID_CONFIG", err)
	}
}

// TestDynamicListenerCertificate: listener.name.ssl.ssl.keystore.location
// altered for this broker switches the SSL listener's certificate for new
// connections at once (established ones keep working) and deleting it
// brings the static one back. Refused with INVALID_CONFIG, changing
// nothing: the cluster-default level (a certificate is one broker's, as in
// Kafka), a keystore that does not load, an unknown listener, a password.
func TestDynamicListenerCertificate(t *testing.T) {
	f := newTLSFiles(t)
	b := newTestBroker(t, func(c *config.Config) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"
		c.TLS = f.serverTLS(security.ClientAuthNone)
	})
	ctx := testenv.Context(t, time.Minute)
	adm := kadm.NewClient(newClient(t, b.Addr()))
	ssl, id := b.ListenerAddr("SSL"), b.cfg.BrokerID
	serial := func() string {
		t.Helper()
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", ssl, f.clientTLS(nil))
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	static := f.broker.Cert.SerialNumber.String()
	if got := serial(); got != static {
		t.Fatalf("serial %s at start, want %s", got, static)
	}
	old := dialTLS(t, ssl, f.clientTLS(nil))
	healthy(t, old)

	next, err := f.ca.Issue(pki.Options{CommonName: "broker", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	nextPath, garbage := f.path("broker-next.pem"), f.path("garbage.pem")
	if err := next.WritePEM(nextPath); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(garbage, []byte("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const key = "listener.name.ssl.ssl.keystore.location"
	for _, bad := range []struct {
		what string
		cfg  kadm.AlterConfig
		ids  []int32
	}{
		{"the default level", kadm.AlterConfig{Name: key, Value: kadm.StringPtr(nextPath)}, nil},
		{"a keystore that does not load", kadm.AlterConfig{Name: key, Value: kadm.StringPtr(garbage)}, []int32{id}},
		{"an unknown listener", kadm.AlterConfig{Name: "listener.name.nosuch.ssl.keystore.location", Value: kadm.StringPtr(nextPath)}, []int32{id}},
		{"a password", kadm.AlterConfig{Name: "listener.name.ssl.ssl.keystore.password", Value: kadm.StringPtr("secret")}, []int32{id}},
	} {
		if err := alterBroker(ctx, adm, bad.cfg, bad.ids...); !errors.Is(err, kerr.InvalidConfig) {
			t.Fatalf("%s: %v, want INVALID_CONFIG", bad.what, err)
		}
	}
	if d := b.dynamic(); len(d.own) != 0 || len(d.defaults) != 0 {
		t.Fatalf("refused alterations left %v / %v", d.own, d.defaults)
	}

	if err := alterBroker(ctx, adm, kadm.AlterConfig{Name: key, Value: kadm.StringPtr(nextPath)}, id); err != nil {
		t.Fatalf("altering %s: %v", key, err)
	}
	testenv.WaitFor(t, 30*time.Second, "new connections getting the new certificate", func() (bool, string) {
		got := serial()
		return got == next.Cert.SerialNumber.String(), got
	})
	healthy(t, old)
	rcs, err := adm.DescribeBrokerConfigs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(fmt.Sprint(id), nil)
	if err != nil || !slices.ContainsFunc(rc.Configs, func(c kadm.Config) bool {
		return c.Key == key && c.MaybeValue() == nextPath && c.Source == kmsg.ConfigSourceDynamicBrokerConfig
	}) {
		t.Fatalf("DescribeConfigs does not report %s=%s (DYNAMIC_BROKER_CONFIG): %v %+v", key, nextPath, err, rc.Configs)
	}

	if err := alterBroker(ctx, adm, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: key}, id); err != nil {
		t.Fatalf("deleting %s: %v", key, err)
	}
	testenv.WaitFor(t, 30*time.Second, "the static certificate back", func() (bool, string) {
		got := serial()
		return got == static, got
	})
}
