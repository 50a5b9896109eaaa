package network_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/internal/network"
)

func TestNewHTTPServerTimeouts(t *testing.T) {
	srv := network.NewHTTPServer(http.NotFoundHandler())
	if srv.ReadHeaderTimeout != network.ReadHeaderTimeout || srv.ReadHeaderTimeout <= 0 {
		t.Errorf("ReadHeaderTimeout = %v", srv.ReadHeaderTimeout)
	}
	if srv.ReadTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Errorf("ReadTimeout = %v, IdleTimeout = %v; want both set", srv.ReadTimeout, srv.IdleTimeout)
	}
}

// TestSlowHeaderClientIsCutOff sends half a request line and stalls: the
// server must close the connection after ReadHeaderTimeout.
func TestSlowHeaderClientIsCutOff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	s, err := network.StartHTTP(ctx, "127.0.0.1:0", http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(start.Add(network.ReadHeaderTimeout + waitBound))
	_, err = io.ReadAll(c) // the server may answer 408 before closing
	elapsed := time.Since(start)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v", elapsed)
	}
	if elapsed < network.ReadHeaderTimeout/2 {
		t.Fatalf("connection closed after %v, before the read-header timeout %v", elapsed, network.ReadHeaderTimeout)
	}
}

func TestServeMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "seam_test_gauge", Help: "A test gauge."})
	reg.MustRegister(g)
	g.Set(42)
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	s, err := network.ServeMetrics(ctx, "127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !strings.Contains(string(body), "seam_test_gauge 42") {
		t.Errorf("metrics body lacks the gauge:\n%s", body)
	}
	resp, err = http.Get("http://" + s.Addr() + "/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/other: status %d, want 404", resp.StatusCode)
	}
}

// TestHTTPServerOutlivesItsContext: ctx bounds the bind only; the server
// serves until Close, which returns once it has stopped.
func TestHTTPServerOutlivesItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := network.StartHTTP(ctx, "127.0.0.1:0", http.NotFoundHandler())
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + s.Addr() + "/")
	if err != nil {
		t.Fatalf("not serving after its context ended: %v", err)
	}
	resp.Body.Close()
	select {
	case <-s.Done():
		t.Fatal("Done closed while serving")
	default:
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Close returned before the server stopped")
	}
	if err := s.Err(); err != nil {
		t.Errorf("Err after Close = %v, want nil", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if c, err := net.Dial("tcp", s.Addr()); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Close", s.Addr())
	}
}

func TestStartHTTPNamesBindError(t *testing.T) {
	s, err := network.StartHTTP(context.Background(), "127.0.0.1:0", http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := network.StartHTTP(context.Background(), s.Addr(), http.NotFoundHandler()); err == nil {
		t.Fatal("a second server bound the same address")
	}
}
