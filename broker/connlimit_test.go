package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// dialFrom dials addr from a given local IP (127.0.0.2 is a different
// address on the loopback interface) and checks the broker answers an
// ApiVersions request on it.
func dialFrom(t testing.TB, addr, localIP string) *rawConn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(localIP)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", localIP, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, conn: c}
}

func apiVersionsOK(t testing.TB, c *rawConn) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
}

// TestMaxConnectionsPerIP: with max.connections.per.ip=100 the 101st
// connection from one address is closed at once and counted, while a client
// from another address is served; closing one of the hundred lets a new
// one in.
func TestMaxConnectionsPerIP(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) { c.Limits.MaxConnectionsPerIP = 100 })
	conns := make([]*rawConn, 100)
	for i := range conns {
		conns[i] = dialFrom(t, b.Addr(), "127.0.0.1")
		apiVersionsOK(t, conns[i])
	}
	over := dialFrom(t, b.Addr(), "127.0.0.1")
	over.expectClosed()
	if n := counterValue(t, b.reg, "tributary_broker_connections_refused_total", map[string]string{"limit": "max.connections.per.ip"}); n != 1 {
		t.Fatalf("refused counter %v, want 1", n)
	}
	other := dialFrom(t, b.Addr(), "127.0.0.2")
	apiVersionsOK(t, other)
	// Every one of the hundred still works.
	for _, c := range conns {
		apiVersionsOK(t, c)
	}
	conns[0].conn.Close()
	testenv.WaitFor(t, 20*time.Second, "a connection admitted after one of the hundred closed", func() (bool, string) {
		c := dialFrom(t, b.Addr(), "127.0.0.1")
		c.send(kmsg.NewPtrApiVersionsRequest())
		_, err := c.readFrame(5 * time.Second)
		return err == nil, fmt.Sprint(err)
	})
}

// TestMaxConnectionsPerIPOverride: an override of 0 refuses a host, one
// above the default lets it have more.
func TestMaxConnectionsPerIPOverride(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) {
		c.Limits.MaxConnectionsPerIP = 1
		c.Limits.MaxConnectionsPerIPOverrides = map[string]int{"127.0.0.2": 0, "127.0.0.3": 3}
	})
	dialFrom(t, b.Addr(), "127.0.0.2").expectClosed()
	for range 3 {
		apiVersionsOK(t, dialFrom(t, b.Addr(), "127.0.0.3"))
	}
	dialFrom(t, b.Addr(), "127.0.0.3").expectClosed()
	apiVersionsOK(t, dialFrom(t, b.Addr(), "127.0.0.1"))
	dialFrom(t, b.Addr(), "127.0.0.1").expectClosed()
}

// TestMaxConnections: max.connections bounds the total from all addresses.
func TestMaxConnections(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) { c.Limits.MaxConnections = 3 })
	apiVersionsOK(t, dialFrom(t, b.Addr(), "127.0.0.1"))
	apiVersionsOK(t, dialFrom(t, b.Addr(), "127.0.0.2"))
	apiVersionsOK(t, dialFrom(t, b.Addr(), "127.0.0.3"))
	dialFrom(t, b.Addr(), "127.0.0.4").expectClosed()
	if n := counterValue(t, b.reg, "tributary_broker_connections_refused_total", map[string]string{"limit": "max.connections"}); n != 1 {
		t.Fatalf("refused counter %v, want 1", n)
	}
}

// TestIdleConnectionsClosed: a connection with no traffic is closed after
// connections.max.idle.ms; one that keeps sending requests, and one
// waiting on a long-poll Fetch longer than the idle time, are not.
func TestIdleConnectionsClosed(t *testing.T) {
	// A request every idle/6 leaves the busy connection 5/6 of idle of
	// slack for a sleep that a loaded machine stretches.
	const idle = 600 * time.Millisecond
	b := newTestBroker(t, func(c *config.Config) { c.Limits.ConnectionsMaxIdle = idle })
	if err := b.CreateTopic(testenv.Context(t, time.Minute), "idle", 1); err != nil {
		t.Fatal(err)
	}
	quiet := dialRaw(t, b.Addr())
	apiVersionsOK(t, quiet)
	busy := dialRaw(t, b.Addr())
	start := time.Now()
	// The busy connection sends a request every idle/6 for 3 idle periods.
	for time.Since(start) < 3*idle {
		apiVersionsOK(t, busy)
		time.Sleep(idle / 6)
	}
	// The quiet one is gone: reading gives EOF, not a timeout.
	_ = quiet.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := quiet.conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isConnReset(err) {
		t.Fatalf("idle connection: read %v, want EOF", err)
	}
	if n := counterValue(t, b.reg, "tributary_broker_connections_idle_closed_total", nil); n < 1 {
		t.Fatalf("idle-closed counter %v", n)
	}
	// A Fetch waiting 4 idle periods for data is not idleness.
	poll := dialRaw(t, b.Addr())
	req := fetchRequest(12, "idle", 0, 0, 1<<20, 1)
	req.MaxWaitMillis = int32((4 * idle).Milliseconds())
	req.MinBytes = 1
	resp := poll.roundTrip(req).(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("long-poll fetch error %d", resp.ErrorCode)
	}
	apiVersionsOK(t, poll)
}

func isConnReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// TestCreateTopicsThrottled: with controller.mutation.rate a client that
// creates partitions faster is refused with THROTTLING_QUOTA_EXCEEDED and a
// throttle time (CreateTopics v6+), and is let in again once it waited.
// Another client id has its own quota.
func TestCreateTopicsThrottled(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) {
		// Burst 2 x 2 x 1 s = 4 partitions. The first request (24
		// partitions) leaves a debt of 20 that takes 10 s to pay back:
		// room for the second request to arrive on a loaded machine
		// (a 0.4 s debt once made this test flaky).
		c.Limits.ControllerMutationRate = 2
		c.Limits.QuotaWindowNum = 2
	})
	ctx := testenv.Context(t, 2*time.Minute)
	create := func(client, topic string, parts int32) *kmsg.CreateTopicsResponse {
		cl := newClient(t, b.Addr(), kgo.ClientID(client))
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, parts, 1
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 30000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := create("flood", "q1", 24); r.Topics[0].ErrorCode != 0 { // granted: the bucket was not in debt
		t.Fatalf("first creation: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	r := create("flood", "q2", 1)
	if r.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || r.ThrottleMillis <= 0 {
		t.Fatalf("second creation: %v, throttle %d ms; want THROTTLING_QUOTA_EXCEEDED with a throttle time",
			kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	if r.Topics[0].ErrorMessage == nil || !strings.Contains(*r.Topics[0].ErrorMessage, "controller.mutation.rate") {
		t.Fatalf("message %v does not name the quota", r.Topics[0].ErrorMessage)
	}
	if _, ok := b.Topics()["q2"]; ok {
		t.Fatal("throttled topic was created")
	}
	if r := create("other", "q3", 1); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("another client id: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	// After the throttle time the client is let in again.
	time.Sleep(time.Duration(r.ThrottleMillis) * time.Millisecond)
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := create("flood", "q2", 1)
		if r.Topics[0].ErrorCode == 0 {
			break
		}
		if r.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || time.Now().After(deadline) {
			t.Fatalf("retry: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
		}
		time.Sleep(time.Duration(r.ThrottleMillis) * time.Millisecond)
	}
	adm := kadm.NewClient(newClient(t, b.Addr()))
	td, err := adm.ListTopics(ctx, "q1", "q2", "q3")
	if err != nil {
		t.Fatal(err)
	}
	if len(td["q1"].Partitions) != 24 || len(td["q2"].Partitions) != 1 || len(td["q3"].Partitions) != 1 {
		t.Fatalf("topics after throttling: %v", td.Names())
	}
	_ = context.Background
}
