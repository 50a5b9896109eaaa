package link

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers each line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(t *testing.T, addr, msg string, timeout time.Duration) (string, time.Duration, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	start := time.Now()
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		return "", 0, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return line, time.Since(start), err
}

func newLink(t *testing.T, upstreams ...string) (*Link, *Proxy) {
	t.Helper()
	l := New("test")
	t.Cleanup(func() { l.Close() })
	p, err := l.NewPool("127.0.0.1:0", upstreams)
	if err != nil {
		t.Fatal(err)
	}
	return l, p
}

// TestLinkForwardsCutsAndRestores: bytes go through; while cut, a new
// connection gets nothing back and an open one is closed; restored, the
// link forwards again.
func TestLinkForwardsCutsAndRestores(t *testing.T) {
	l, p := newLink(t, echoServer(t))
	if got, _, err := roundTrip(t, p.Addr(), "hello", 10*time.Second); err != nil || got != "hello\n" {
		t.Fatalf("through the link: %q, %v", got, err)
	}
	open, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if _, err := io.WriteString(open, "x\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(open).ReadString('\n'); err != nil || line != "x\n" {
		t.Fatalf("open connection: %q, %v", line, err)
	}
	l.Cut()
	if l.State() != "cut" {
		t.Errorf("State() = %q, want cut", l.State())
	}
	_ = open.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := open.Read(make([]byte, 1)); err == nil {
		t.Errorf("a connection open across the cut still reads (%d bytes)", n)
	}
	if got, _, err := roundTrip(t, p.Addr(), "lost", 500*time.Millisecond); err == nil {
		t.Errorf("a connection made while cut answered %q", got)
	}
	l.Restore()
	if got, _, err := roundTrip(t, p.Addr(), "again", 10*time.Second); err != nil || got != "again\n" {
		t.Fatalf("after restore: %q, %v", got, err)
	}
}

// TestLinkLatencyAndBandwidth: a round trip takes at least twice the
// one-way latency, and 64 KiB at 128 KiB/s take at least half a second
// (the echo flows back while the rest still goes up, so the directions
// overlap).
func TestLinkLatencyAndBandwidth(t *testing.T) {
	l, p := newLink(t, echoServer(t))
	l.SetLatency(100 * time.Millisecond)
	if got, rtt, err := roundTrip(t, p.Addr(), "slow", 10*time.Second); err != nil || got != "slow\n" || rtt < 200*time.Millisecond {
		t.Fatalf("round trip with 100ms latency: %q in %v, %v; want >= 200ms", got, rtt, err)
	}
	l.SetLatency(0)
	l.SetBandwidth(128 << 10)
	msg := make([]byte, 64<<10)
	for i := range msg {
		msg[i] = 'a' + byte(i%26)
	}
	got, rtt, err := roundTrip(t, p.Addr(), string(msg), 30*time.Second)
	if err != nil || got != string(msg)+"\n" {
		t.Fatalf("64 KiB through a capped link: %d bytes, %v", len(got), err)
	}
	if rtt < 500*time.Millisecond {
		t.Errorf("64 KiB at 128 KiB/s took %v, want >= 500ms", rtt)
	}
}

// TestPoolSkipsADeadUpstream: with the first upstream gone, every
// connection reaches the second.
func TestPoolSkipsADeadUpstream(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	_, p := newLink(t, deadAddr, echoServer(t))
	for i := range 4 {
		if got, _, err := roundTrip(t, p.Addr(), "ok", 10*time.Second); err != nil || got != "ok\n" {
			t.Fatalf("connection %d: %q, %v", i, got, err)
		}
	}
}
