// Package pki makes the certificates a secured Tributary runs on when nobody
// brought their own: a self-signed certificate authority and the server and
// client certificates it issues, written as PEM (key and chain in one file,
// as Kafka's ssl.keystore.type=PEM reads them, KIP-651) or as PKCS12
// keystores and truststores. `tributary pipeline up --secure` and the tests
// of every secured listener use it; production certificates come from the
// operator's own CA and never from here.
//
// Keys are ECDSA P-256. Certificates are valid from one hour before their
// creation (clock skew) for Options.Validity (a year by default), or exactly
// for [NotBefore, NotAfter] when those are given (expired certificates for
// tests). Nothing here is stored but what the Write methods write; a CA and
// its leaves are immutable values, safe to share between goroutines.
package pki
