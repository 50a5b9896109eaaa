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
//
//   - Kafka listeners: ListenKafka binds the address a broker serves the
//     Kafka protocol on; ListenKafkaTLS wraps each accepted connection in a
//     TLS server connection whose handshake the caller runs (under its own
//     deadline, after counting the connection).
//
//   - HTTP: NewHTTPServer returns an *http.Server with read-header, read
//     and idle timeouts (a client that trickles its headers is cut off);
//     StartHTTP binds and serves one in the background until it is
//     closed; ServeMetrics
//     serves a Prometheus gatherer on /metrics. The schema registry, the
//     audit service and every /metrics endpoint use them.
//
//   - Client security: ClientConfig.Protocol (security.protocol), TLS (a
//     crypto/tls config, kgo.DialTLSConfig, for SSL and SASL_SSL) and SASL
//     (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 through franz-go's pkg/sasl);
//     NewClient refuses contradictory settings (Validate).
//     ClientFromProperties and SecurityFromProperties read Kafka's client
//     keys (bootstrap.servers, client.id, security.protocol, ssl.*,
//     sasl.mechanism, sasl.jaas.config, librdkafka's sasl.username and
//     sasl.password) under a prefix, for every tier's configuration file
//     and the CLI's --command-config; secrets may be ${env:NAME} or
//     ${file:PATH[:KEY]} references. Errors name the key, never a secret.
//
// Zero values mean franz-go's or net/http's defaults except where a field
// says otherwise.
//
// Concurrency: ClientConfig is a value and safe to share; an HTTPServer is
// safe for concurrent use (Addr, Close, Shutdown, Done, Err).
package network
