package network_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/pki"
	"github.com/tributary/tributary/internal/properties"
)

// tlsProxy terminates TLS (requiring a client certificate of ca) in front
// of a plaintext in-process broker that advertises the proxy's address, so
// that every connection of a client goes through TLS. It records the
// subjects of the client certificates it saw.
type tlsProxy struct {
	ln       net.Listener
	mu       sync.Mutex
	subjects []string
}

func newTLSProxy(t *testing.T, ca *pki.CA) (*tlsProxy, *broker.Broker) {
	t.Helper()
	srv, err := ca.Issue(pki.Options{CommonName: "broker", Hosts: []string{"127.0.0.1"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{srv.TLSCertificate()},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.Pool(),
		MinVersion:   tls.VersionTLS12,
	})
	if err != nil {
		t.Fatal(err)
	}
	px := &tlsProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })

	b, err := broker.New(config.Config{
		BrokerID:               1,
		Listeners:              "PLAINTEXT://127.0.0.1:0",
		AdvertisedListeners:    "PLAINTEXT://" + ln.Addr().String(),
		LogDirs:                []string{t.TempDir()},
		RetentionCheckInterval: time.Hour,
		NumPartitions:          1,
	}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	// The broker serves until ctx ends: the whole test.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })

	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go px.serve(c.(*tls.Conn), b.Addr())
		}
	}()
	return px, b
}

func (px *tlsProxy) serve(c *tls.Conn, backend string) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(waitBound))
	if err := c.Handshake(); err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	if certs := c.ConnectionState().PeerCertificates; len(certs) > 0 {
		px.mu.Lock()
		px.subjects = append(px.subjects, certs[0].Subject.CommonName)
		px.mu.Unlock()
	}
	up, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

func (px *tlsProxy) seen() []string {
	px.mu.Lock()
	defer px.mu.Unlock()
	return append([]string(nil), px.subjects...)
}

// TestTLSRoundTrip produces and consumes through the TLS proxy with a
// client configured from Kafka's ssl.* keys (mutual TLS, PEM and PKCS12
// keystores) and checks the content and the client certificate the proxy
// saw; a client without a certificate, or trusting another CA, fails.
func TestTLSRoundTrip(t *testing.T) {
	f := newCertFiles(t)
	px, _ := newTLSProxy(t, f.ca)
	addr := px.ln.Addr().String()

	for name, props := range map[string]map[string]string{
		"PEM": {
			"security.protocol": "SSL", "ssl.truststore.location": f.path("ca.pem"),
			"ssl.keystore.location": f.path("client.pem"),
		},
		"PKCS12": {
			"security.protocol": "SSL", "ssl.truststore.location": f.path("ca.pem"),
			"ssl.keystore.type": "PKCS12", "ssl.keystore.location": f.path("client.p12"), "ssl.keystore.password": "store-secret",
		},
	} {
		t.Run(name, func(t *testing.T) {
			props["bootstrap.servers"] = addr
			p := properties.New(props)
			c, err := network.ClientFromProperties(p, "")
			if err != nil || p.Err() != nil {
				t.Fatal(err, p.Err())
			}
			roundTrip(t, c, "tls-"+name, "secret payload "+name)
		})
	}
	for _, s := range px.seen() {
		if s != "client" {
			t.Errorf("the proxy saw client certificate %q, want client", s)
		}
	}
	if len(px.seen()) == 0 {
		t.Error("the proxy saw no client certificate")
	}

	other, err := pki.NewCA("other")
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]*tls.Config{
		"no client certificate": {RootCAs: f.ca.Pool(), MinVersion: tls.VersionTLS12},
		"another CA":            {RootCAs: other.Pool(), MinVersion: tls.VersionTLS12},
	} {
		cl, err := network.NewClient(network.ClientConfig{Brokers: []string{addr}, TLS: cfg})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := cl.Ping(ctx); err == nil {
			t.Errorf("%s: ping succeeded", name)
		}
		cancel()
		cl.Close()
	}
}

func roundTrip(t *testing.T, c network.ClientConfig, topic, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	prod, err := network.NewClient(c, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cons, err := network.NewClient(c, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("the produced record was not fetched in time")
		}
		if errs := fs.Errors(); len(errs) > 0 && errs[0].Err != context.DeadlineExceeded {
			t.Logf("fetch: %v", errs[0].Err)
		}
		if recs := fs.Records(); len(recs) > 0 {
			if string(recs[0].Value) != value {
				t.Fatalf("fetched %q, want %q", recs[0].Value, value)
			}
			return
		}
	}
}
