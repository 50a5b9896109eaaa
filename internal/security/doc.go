// Package security holds what the server and the client side of a secured
// Kafka-protocol connection share: the security protocols (PLAINTEXT, SSL,
// SASL_PLAINTEXT, SASL_SSL) and the TLS material named by Kafka's ssl.*
// keys, read through internal/properties.
//
// Key names are Kafka's, with librdkafka's spellings accepted on the client
// side, so that one properties file serves the Java tools, kcat and us:
//
//	ssl.keystore.type            PEM (default when a PEM key is given) or PKCS12 (JKS is refused: convert it)
//	ssl.keystore.location        PEM: one file with the private key and the certificate chain; PKCS12: the store
//	ssl.keystore.password        PKCS12 store password
//	ssl.key.password             password of an encrypted key (PKCS12 uses the store password when empty)
//	ssl.keystore.certificate.chain, ssl.keystore.key   inline PEM instead of a file (KIP-651)
//	ssl.truststore.type          PEM or PKCS12
//	ssl.truststore.location      CA certificates; absent = the system roots (clients) or none (servers)
//	ssl.truststore.password      PKCS12 store password
//	ssl.truststore.certificates  inline PEM CA certificates (KIP-651)
//	ssl.enabled.protocols        TLSv1.2,TLSv1.3 (default); older versions are refused
//	ssl.cipher.suites            IANA names of TLS 1.2 suites; TLS 1.3's are fixed by Go
//	ssl.endpoint.identification.algorithm   https (default: check the host name) or empty (do not)
//	librdkafka: ssl.ca.location, ssl.certificate.location, ssl.key.location, ssl.key.password
//
// SASL clients: SASL holds a mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)
// and credentials; ParseJAAS reads sasl.jaas.config as Kafka's JaasConfig
// does and SASLFromJAAS takes a client's credentials from its
// PlainLoginModule or ScramLoginModule entry. ExpandSecrets resolves the
// ${env:NAME}, ${file:PATH} and ${file:PATH:KEY} references that keep
// secrets out of configuration files and command lines.
//
// Files are read when the Load methods are called; TLS caches nothing.
// Every error names the key whose value is at fault. Values are plain
// structs, safe to copy and share.
//
// # Server side
//
// ServerTLS adds a listener's ssl.client.auth (none, requested, required)
// and ssl.principal.mapping.rules; ServerTLSFromProperties reads them with
// Kafka's per-listener precedence, listener.name.<lower-case
// listener>.ssl.* over ssl.* key by key, filing errors under the key
// given. A Server serves one listener: its Config hands every handshake the
// key pair and trust current at that moment, Reload (Run polls it,
// DefaultReloadInterval) rereads the files when their content hash changed
// and keeps the old set, returning the error, when the new one does not
// load. Principal gives a handshake's Kafka principal: User:<subject> for a
// client certificate, the subject in RFC 2253 form (SubjectDN, Java's
// X500Principal.getName()) mapped by the rules, or Anonymous. A Server is
// safe for concurrent use.
//
// # Principal mapping rules
//
// Kafka's grammar, parsed by ParsePrincipalRules: a comma-separated list of
// DEFAULT and RULE:pattern/replacement/[LU], where '/' and '\' are escaped
// with a backslash inside pattern and replacement, the pattern must match
// the whole subject, $n in the replacement refers to a group, and L or U
// lower- or upper-cases the result. The first matching rule names the user;
// a subject no rule matches fails the handshake (ErrNoPrincipalRule).
package security
