package devcluster

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/pki"
	"github.com/tributary/tributary/internal/security"
)

func TestValidateNamesTheField(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "Dir is required"},
		{Config{Dir: "d", Brokers: 65}, "Brokers 65"},
		{Config{Dir: "d", Registry: "nohost"}, `Registry "nohost"`},
		{Config{Dir: "d", ZooKeeper: "h:1/a//b"}, "ZooKeeper"},
		{Config{Dir: "d", Listeners: []Listener{{Protocol: security.SSL}}}, "TLS: a TLS listener needs a key pair"},
		{Config{Dir: "d", Listeners: []Listener{{}, {Name: "plaintext"}}}, "Listeners PLAINTEXT"},
		{Config{Dir: "d", InterBrokerListener: "INTERNAL"}, `InterBrokerListener "INTERNAL"`},
		{Config{Dir: "d", Listeners: []Listener{{Protocol: "TLS"}}}, "Listeners TLS"},
	} {
		err := c.cfg.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrInvalidConfig naming %q", c.cfg, err, c.want)
		}
	}
}

// TestStopStartBroker: a broker stopped and started again comes back on
// its port with its partition's records; meanwhile the other broker keeps
// serving its own.
func TestStopStartBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{Name: "test", Dir: t.TempDir(), Brokers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	before := c.Bootstrap()
	cl, err := kgo.NewClient(kgo.SeedBrokers(before...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if resp, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "t"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: int32(i % 2), Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, 20)
	if err := c.StopBroker(2); err != nil {
		t.Fatal(err)
	}
	if err := c.StopBroker(2); err != nil {
		t.Fatalf("stopping a stopped broker: %v", err)
	}
	if err := c.StartBroker(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if after := c.Bootstrap(); after[1] != before[1] {
		t.Fatalf("broker 2 came back on %s, was %s", after[1], before[1])
	}
	produce(20, 40)
	rd, err := kgo.NewClient(kgo.SeedBrokers(before...), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	next := map[int32]int{0: 0, 1: 1}
	for seen := 0; seen < 40; {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 40: %v", seen, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != strconv.Itoa(next[r.Partition]) {
				t.Fatalf("partition %d: %s, want %d", r.Partition, r.Value, next[r.Partition])
			}
			next[r.Partition] += 2
			seen++
		})
	}
	if err := c.StartBroker(ctx, 3); !errors.Is(err, ErrNoBroker) {
		t.Errorf("StartBroker(3) on 2 brokers: %v, want ErrNoBroker", err)
	}
}

// TestSecuredListeners: a cluster on a SASL_SSL listener for clients and a
// mutual-TLS SSL listener the brokers replicate over. A ScramUsers user
// produces over SASL_SSL to a topic replicated on both brokers, a client
// certificate reads it back on the SSL listener, and a PLAINTEXT client, a
// wrong password and a TLS client without a certificate are refused.
func TestSecuredListeners(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ca, err := pki.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile, brokerFile, clientFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "broker.pem"), filepath.Join(dir, "client.pem")
	if err := ca.WritePEM(caFile); err != nil {
		t.Fatal(err)
	}
	for file, o := range map[string]pki.Options{
		brokerFile: {CommonName: "broker", Hosts: []string{DefaultHost}},
		clientFile: {CommonName: "reader", Client: true},
	} {
		leaf, err := ca.Issue(o)
		if err == nil {
			err = leaf.WritePEM(file)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := Start(ctx, Config{
		Name: "secure", Dir: filepath.Join(dir, "data"), Brokers: 2,
		Listeners: []Listener{
			{Protocol: security.SASLSSL},
			{Protocol: security.SSL, ClientAuth: security.ClientAuthRequired},
		},
		InterBrokerListener: "SSL",
		TLS:                 security.TLS{KeystoreLocation: brokerFile, TruststoreLocation: caFile},
		ScramUsers:          map[string]string{"alice": "alice-secret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	saslAddrs, sslAddrs := c.BootstrapOn("sasl_ssl"), c.BootstrapOn("SSL")
	if len(saslAddrs) != 2 || len(sslAddrs) != 2 || saslAddrs[0] != c.Bootstrap()[0] || saslAddrs[0] == sslAddrs[0] {
		t.Fatalf("SASL_SSL %v, SSL %v, Bootstrap %v", saslAddrs, sslAddrs, c.Bootstrap())
	}
	trust := security.TLS{TruststoreLocation: caFile}
	trustCfg, err := trust.ClientConfig("")
	if err != nil {
		t.Fatal(err)
	}
	alice := network.ClientConfig{Brokers: saslAddrs, TLS: trustCfg, Protocol: security.SASLSSL,
		SASL: security.SASL{Mechanism: security.MechanismScramSHA512, Username: "alice", Password: "alice-secret"}}
	cl, err := network.NewClient(alice)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 2, nil, "t"); err != nil || resp.Err != nil {
		t.Fatalf("create over SASL_SSL: %v %v", err, resp.Err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d over SASL_SSL: %v", i, err)
		}
	}
	mtls := trust
	mtls.KeystoreLocation = clientFile
	mtlsCfg, err := mtls.ClientConfig("")
	if err != nil {
		t.Fatal(err)
	}
	rd, err := network.NewClient(network.ClientConfig{Brokers: sslAddrs, TLS: mtlsCfg, Protocol: security.SSL},
		kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for seen := 0; seen < 10; {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 10 over SSL: %v", seen, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != strconv.Itoa(seen) {
				t.Fatalf("record %d: %s", seen, r.Value)
			}
			seen++
		})
	}
	// Both replicas in sync: the follower fetched over the SSL listener.
	adm := kadm.NewClient(cl)
	for {
		td, err := adm.ListTopics(ctx, "t")
		if err == nil && len(td["t"].Partitions[0].ISR) == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ISR of t never reached 2 replicas: %v %v", td, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	wrong := alice
	wrong.SASL.Password = "wrong"
	for what, cc := range map[string]network.ClientConfig{
		"PLAINTEXT client": {Brokers: saslAddrs},
		"wrong password":   wrong,
		"no certificate":   {Brokers: sslAddrs, TLS: trustCfg, Protocol: security.SSL},
		"SASL_SSL on SSL":  func() network.ClientConfig { cc := alice; cc.Brokers = sslAddrs; return cc }(),
	} {
		bad, err := network.NewClient(cc, kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		if err := bad.Ping(pctx); err == nil {
			t.Errorf("%s: ping succeeded; want refused", what)
		}
		pcancel()
		bad.Close()
	}
}
