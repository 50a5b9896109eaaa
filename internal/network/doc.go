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
//     KgoLogger. Compression is the one reader of compression.type names
//     (none, gzip, snappy, lz4, zstd, any case) for every producer.
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
//   - HTTP security: HTTPConfigFromProperties reads a listener's ssl.*
//     keys (security.TLS), ssl.client.authentication (NONE, REQUESTED,
//     REQUIRED), authentication.method=BASIC, authentication.realm,
//     authentication.roles, authentication.users.file (Jetty's
//     HashLoginService format, see Users) and
//     authorization.roles.<role>=read|write|admin; Load turns them into an
//     HTTPSecurity (a server tls.Config from ServerTLS, a BasicAuth) that
//     StartSecureHTTP and ServeHTTP apply, with a NeedFunc of the service
//     saying which Permission each request needs. Refusals are 401 with
//     WWW-Authenticate and 403, with Confluent's body
//     {"error_code":40101|40301,"message":...}. ServeMetricsWith does the
//     same for /metrics (Read) and pprof (Admin; mounted on loopback
//     addresses only unless metrics.pprof.enable says otherwise), from the
//     metrics.* keys (MetricsConfigFromProperties).
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
// Password checks are constant-time; bcrypt checks run at most
// AuthConfig.MaxChecks at a time and successes are cached per user (an HMAC
// of the password under a per-process key), so a brute force holds a
// bounded share of the CPUs and does not slow logged-in users.
//
// Concurrency: ClientConfig is a value and safe to share; an HTTPServer and
// a BasicAuth are safe for concurrent use.
package network
