// Package network is the one place where Tributary opens connections and
// listeners, so that transport concerns (TLS, SASL, HTTP authentication)
// are added once rather than at every call site.
//
//   - Kafka clients: a ClientConfig (bootstrap servers, client.id, dial
//     and request timeouts, logger) becomes []kgo.Opt through Opts, and
//     NewClient builds a *kgo.Client from it plus the caller's own
//     producer or consumer options. Every Kafka client of the project
//     (broker replica fetchers, mirror, loader, client library, audit
//     service, CLI) is built here; franz-go's log lines reach slog through
//     KgoLogger.
//   - Kafka listeners: ListenKafka binds the address a broker serves the
//     Kafka protocol on; ListenKafkaTLS wraps each accepted connection in a
//     TLS server connection whose handshake the caller runs (under its own
//     deadline, after counting the connection).
//   - HTTP: NewHTTPServer returns an *http.Server with read-header, read
//     and idle timeouts (a client that trickles its headers is cut off);
//     StartHTTP binds and serves one in the background until it is
//     closed; ServeMetrics
//     serves a Prometheus gatherer on /metrics. The schema registry, the
//     audit service and every /metrics endpoint use them.
//
// Zero values mean franz-go's or net/http's defaults except where a field
// says otherwise. ClientConfig.TLS dials over TLS (kgo.DialTLSConfig); SASL
// settings will sit beside it.
//
// Concurrency: ClientConfig is a value and safe to share; an HTTPServer is
// safe for concurrent use (Addr, Close, Shutdown, Done, Err).
package network
