package network

import (
	"context"
	"crypto/tls"
	"net"
)

// ListenKafka binds addr (HOST:PORT; port 0 picks one) for the Kafka
// protocol. ctx bounds the bind only; the caller closes the listener.
func ListenKafka(ctx context.Context, addr string) (net.Listener, error) {
	return listenTCP(ctx, addr)
}

// ListenKafkaTLS binds addr as ListenKafka does and wraps every accepted
// connection in a TLS server connection with cfg. The handshake is not run
// by Accept: the caller runs it (tls.Conn.HandshakeContext) under its own
// deadline, after counting the connection against its limits, so that a
// peer that never completes a handshake cannot stall the accept loop.
func ListenKafkaTLS(ctx context.Context, addr string, cfg *tls.Config) (net.Listener, error) {
	ln, err := listenTCP(ctx, addr)
	if err != nil {
		return nil, err
	}
	return tls.NewListener(ln, cfg), nil
}

// ListenHTTP binds addr (HOST:PORT; port 0 picks one) for an HTTP server
// built by NewHTTPServer. ctx bounds the bind only; the caller closes the
// listener (or the server that serves it).
func ListenHTTP(ctx context.Context, addr string) (net.Listener, error) {
	return listenTCP(ctx, addr)
}

// listenTCP binds a plain TCP listener; ListenKafkaTLS wraps it.
func listenTCP(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp", addr)
}
