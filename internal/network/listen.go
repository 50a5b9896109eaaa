package network

import (
	"context"
	"net"
)

// ListenKafka binds addr (HOST:PORT; port 0 picks one) for the Kafka
// protocol. ctx bounds the bind only; the caller closes the listener.
func ListenKafka(ctx context.Context, addr string) (net.Listener, error) {
	return listenTCP(ctx, addr)
}

// ListenHTTP binds addr (HOST:PORT; port 0 picks one) for an HTTP server
// built by NewHTTPServer. ctx bounds the bind only; the caller closes the
// listener (or the server that serves it).
func ListenHTTP(ctx context.Context, addr string) (net.Listener, error) {
	return listenTCP(ctx, addr)
}

// listenTCP is where a TLS wrapper will go when a listener's security
// protocol asks for one.
func listenTCP(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp", addr)
}
