package network

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Timeouts of every HTTP server. There is no write timeout: a profile
// (/debug/pprof/profile?seconds=N) streams for as long as it was asked to.
const (
	// ReadHeaderTimeout cuts off a client that has not sent its request
	// headers in time (a slow-loris client holds a connection otherwise).
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout = time.Minute
	// IdleTimeout closes a keep-alive connection with no request.
	IdleTimeout = 2 * time.Minute
	// ShutdownTimeout bounds HTTPServer.Close waiting for requests in
	// flight.
	ShutdownTimeout = 5 * time.Second
)

// NewHTTPServer returns a server for h with the timeouts above; serve it
// on a listener from ListenHTTP, or use StartHTTP.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		IdleTimeout:       IdleTimeout,
	}
}

// HTTPServer is an HTTP server serving in the background.
type HTTPServer struct {
	srv       *http.Server
	ln        net.Listener
	done      chan struct{}
	err       error // set before done closes
	closeOnce sync.Once
	closeErr  error
}

// StartHTTP binds addr and serves h on it in the background until Close or
// Shutdown is called. ctx bounds the bind only, as for ListenHTTP: the
// caller decides how long a shutdown may wait. StartSecureHTTP adds TLS
// and authentication.
func StartHTTP(ctx context.Context, addr string, h http.Handler) (*HTTPServer, error) {
	return StartSecureHTTP(ctx, addr, h, nil, nil)
}

// MetricsHandler serves g in the Prometheus text format on /metrics; a
// caller may add handlers (the broker adds /debug/pprof/) to the mux.
func MetricsHandler(g prometheus.Gatherer) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	return mux
}

// ServeMetrics serves g on addr/metrics as StartHTTP does, plain and
// anonymous, with pprof on a loopback address (ServeMetricsWith with a
// zero MetricsConfig).
func ServeMetrics(ctx context.Context, addr string, g prometheus.Gatherer) (*HTTPServer, error) {
	return ServeMetricsWith(ctx, addr, g, MetricsConfig{})
}

// Addr is the address the server listens on (with the port picked for a
// port 0).
func (s *HTTPServer) Addr() string { return s.ln.Addr().String() }

// Done is closed when the server has stopped serving.
func (s *HTTPServer) Done() <-chan struct{} { return s.done }

// Err is why the server stopped serving, nil after Close or Shutdown;
// call it after Done is closed.
func (s *HTTPServer) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Shutdown stops accepting, waits until the requests in flight are
// answered or ctx ends, and returns once the server has stopped.
func (s *HTTPServer) Shutdown(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.closeErr = s.srv.Shutdown(ctx)
		if s.closeErr != nil {
			_ = s.srv.Close()
		}
		<-s.done
	})
	return s.closeErr
}

// Close is Shutdown bounded by ShutdownTimeout. It is safe to call more
// than once.
func (s *HTTPServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	return s.Shutdown(ctx)
}
