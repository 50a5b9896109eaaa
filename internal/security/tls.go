package security

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"software.sslmate.com/src/go-pkcs12"

	"github.com/tributary/tributary/internal/properties"
)

// Store types (ssl.keystore.type, ssl.truststore.type).
const (
	StorePEM    = "PEM"
	StorePKCS12 = "PKCS12"
)

// TLS is the ssl.* settings of one side of a connection. The zero value
// has no key pair and trusts the system roots.
type TLS struct {
	KeystoreType     string // PEM or PKCS12; "" guesses from the content
	KeystoreLocation string
	KeystorePassword string
	KeyPassword      string
	// KeystoreCertificateChain and KeystoreKey are inline PEM (KIP-651);
	// ssl.certificate.location / ssl.key.location (librdkafka) are read
	// into CertificateLocation and KeyLocation.
	KeystoreCertificateChain string
	KeystoreKey              string
	CertificateLocation      string
	KeyLocation              string

	TruststoreType         string
	TruststoreLocation     string
	TruststorePassword     string
	TruststoreCertificates string // inline PEM

	EnabledProtocols []string // default TLSv1.2, TLSv1.3
	CipherSuites     []string
	// NoEndpointIdentification is ssl.endpoint.identification.algorithm
	// set empty: the client does not check the server's host name.
	NoEndpointIdentification bool
}

// TLSKeys are the keys TLSFromProperties reads, without their prefix.
var TLSKeys = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.certificate.chain", "ssl.keystore.key",
	"ssl.certificate.location", "ssl.key.location",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
	"ssl.ca.location",
	"ssl.enabled.protocols", "ssl.cipher.suites", "ssl.endpoint.identification.algorithm",
}

// TLSFromProperties reads prefix+key for each of TLSKeys (prefix "" for a
// client's own file, "source.dc1." for the mirror's sources,
// "listener.name.ssl." for a broker's listener). Problems are recorded in p.
func TLSFromProperties(p *properties.Props, prefix string) TLS {
	s := func(k string) string { return p.String(prefix + k) }
	t := TLS{
		KeystoreType:             strings.ToUpper(s("ssl.keystore.type")),
		KeystoreLocation:         s("ssl.keystore.location"),
		KeystorePassword:         s("ssl.keystore.password"),
		KeyPassword:              s("ssl.key.password"),
		KeystoreCertificateChain: s("ssl.keystore.certificate.chain"),
		KeystoreKey:              s("ssl.keystore.key"),
		CertificateLocation:      s("ssl.certificate.location"),
		KeyLocation:              s("ssl.key.location"),
		TruststoreType:           strings.ToUpper(s("ssl.truststore.type")),
		TruststoreLocation:       s("ssl.truststore.location"),
		TruststorePassword:       s("ssl.truststore.password"),
		TruststoreCertificates:   s("ssl.truststore.certificates"),
		EnabledProtocols:         p.List(prefix + "ssl.enabled.protocols"),
		CipherSuites:             p.List(prefix + "ssl.cipher.suites"),
	}
	if ca := s("ssl.ca.location"); ca != "" {
		if t.TruststoreLocation != "" {
			p.Reject(prefix+"ssl.ca.location", errors.New("give ssl.truststore.location or ssl.ca.location, not both"))
		}
		t.TruststoreLocation, t.TruststoreType = ca, StorePEM
	}
	if v, ok := p.Lookup(prefix + "ssl.endpoint.identification.algorithm"); ok {
		switch strings.ToLower(v) {
		case "":
			t.NoEndpointIdentification = true
		case "https":
		default:
			p.Reject(prefix+"ssl.endpoint.identification.algorithm", errors.New("want https or empty"))
		}
	}
	for _, k := range []string{"ssl.keystore.type", "ssl.truststore.type"} {
		if v := s(k); v != "" && !strings.EqualFold(v, StorePEM) && !strings.EqualFold(v, StorePKCS12) {
			p.Reject(prefix+k, errors.New("want PEM or PKCS12 (convert a JKS store with keytool -importkeystore -deststoretype PKCS12)"))
		}
	}
	return t
}

// HasKeyPair reports whether t names a certificate and key.
func (t TLS) HasKeyPair() bool {
	return t.KeystoreLocation != "" || t.KeystoreKey != "" || t.CertificateLocation != ""
}

// LoadKeyPair reads the certificate chain and private key t names; nil
// without error when it names none.
func (t TLS) LoadKeyPair() (*tls.Certificate, error) {
	switch {
	case t.KeystoreKey != "" || t.KeystoreCertificateChain != "":
		if t.KeystoreKey == "" || t.KeystoreCertificateChain == "" {
			return nil, fmt.Errorf("%w: ssl.keystore.key and ssl.keystore.certificate.chain go together", ErrBadTLS)
		}
		return pemPair("ssl.keystore.key", []byte(t.KeystoreCertificateChain), []byte(t.KeystoreKey))
	case t.CertificateLocation != "" || t.KeyLocation != "":
		if t.CertificateLocation == "" || t.KeyLocation == "" {
			return nil, fmt.Errorf("%w: ssl.certificate.location and ssl.key.location go together", ErrBadTLS)
		}
		certs, err := readFile("ssl.certificate.location", t.CertificateLocation)
		if err != nil {
			return nil, err
		}
		key, err := readFile("ssl.key.location", t.KeyLocation)
		if err != nil {
			return nil, err
		}
		return pemPair("ssl.key.location", certs, key)
	case t.KeystoreLocation == "":
		return nil, nil
	}
	data, err := readFile("ssl.keystore.location", t.KeystoreLocation)
	if err != nil {
		return nil, err
	}
	if storeType(t.KeystoreType, data) == StorePEM {
		return pemPair("ssl.keystore.location", data, data)
	}
	password := t.KeystorePassword
	if t.KeyPassword != "" {
		password = t.KeyPassword
	}
	key, leaf, chain, err := pkcs12.DecodeChain(data, password)
	if err != nil {
		return nil, fmt.Errorf("%w: ssl.keystore.location %s: %v", ErrBadTLS, t.KeystoreLocation, err)
	}
	cert := &tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}

// LoadTrust reads the CA certificates t names; nil without error when it
// names none (a client then trusts the system roots).
func (t TLS) LoadTrust() (*x509.CertPool, error) {
	if t.TruststoreCertificates != "" {
		return pemPool("ssl.truststore.certificates", []byte(t.TruststoreCertificates))
	}
	if t.TruststoreLocation == "" {
		return nil, nil
	}
	data, err := readFile("ssl.truststore.location", t.TruststoreLocation)
	if err != nil {
		return nil, err
	}
	if storeType(t.TruststoreType, data) == StorePEM {
		return pemPool("ssl.truststore.location", data)
	}
	certs, err := pkcs12.DecodeTrustStore(data, t.TruststorePassword)
	if err != nil {
		return nil, fmt.Errorf("%w: ssl.truststore.location %s: %v", ErrBadTLS, t.TruststoreLocation, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// ClientConfig is the crypto/tls configuration of a client connecting with
// t: its key pair (mutual TLS) if any, its trust (or the system roots),
// versions and suites. serverName is checked unless endpoint
// identification is off; "" lets crypto/tls take it from the address.
func (t TLS) ClientConfig(serverName string) (*tls.Config, error) {
	cfg, err := t.base()
	if err != nil {
		return nil, err
	}
	if cfg.RootCAs, err = t.LoadTrust(); err != nil {
		return nil, err
	}
	cert, err := t.LoadKeyPair()
	if err != nil {
		return nil, err
	}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	cfg.ServerName = serverName
	if t.NoEndpointIdentification {
		// Verify the chain, not the name, as Kafka does with the algorithm
		// unset.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChain(raw, roots)
		}
	}
	return cfg, nil
}

// Versions returns the minimum and maximum TLS versions of
// ssl.enabled.protocols (TLS 1.2 and 1.3 by default).
func (t TLS) Versions() (lo, hi uint16, err error) {
	if len(t.EnabledProtocols) == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	for _, p := range t.EnabledProtocols {
		var v uint16
		switch p {
		case "TLSv1.2":
			v = tls.VersionTLS12
		case "TLSv1.3":
			v = tls.VersionTLS13
		default:
			return 0, 0, fmt.Errorf("%w: ssl.enabled.protocols %q: want TLSv1.2 and/or TLSv1.3", ErrBadTLS, p)
		}
		if lo == 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	return lo, hi, nil
}

// Suites returns the IDs of ssl.cipher.suites; nil means Go's defaults.
func (t TLS) Suites() ([]uint16, error) {
	if len(t.CipherSuites) == 0 {
		return nil, nil
	}
	known := map[string]uint16{}
	for _, s := range tls.CipherSuites() {
		known[s.Name] = s.ID
	}
	var ids []uint16
	for _, name := range t.CipherSuites {
		id, ok := known[name]
		if !ok {
			return nil, fmt.Errorf("%w: ssl.cipher.suites %q: not a secure suite Go offers", ErrBadTLS, name)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// base is the version and suite part every side shares.
func (t TLS) base() (*tls.Config, error) {
	lo, hi, err := t.Versions()
	if err != nil {
		return nil, err
	}
	suites, err := t.Suites()
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: lo, MaxVersion: hi, CipherSuites: suites}, nil
}

func verifyChain(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("tls: server sent no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return err
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

func storeType(declared string, data []byte) string {
	if declared != "" {
		return strings.ToUpper(declared)
	}
	if strings.Contains(string(data), "-----BEGIN") {
		return StorePEM
	}
	return StorePKCS12
}

func readFile(key, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadTLS, key, err)
	}
	return data, nil
}

// pemPair parses a chain and a key, possibly from the same bytes.
func pemPair(key string, certPEM, keyPEM []byte) (*tls.Certificate, error) {
	var certs []byte
	var keyBlock []byte
	for rest := certPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			certs = append(certs, pem.EncodeToMemory(b)...)
		}
	}
	for rest := keyPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		switch b.Type {
		case "ENCRYPTED PRIVATE KEY":
			return nil, fmt.Errorf("%w: %s: encrypted PEM keys are not supported yet; give the key unencrypted (file mode 0600) or use a PKCS12 keystore", ErrBadTLS, key)
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			keyBlock = pem.EncodeToMemory(b)
		}
	}
	if certs == nil {
		return nil, fmt.Errorf("%w: %s: no CERTIFICATE block", ErrBadTLS, key)
	}
	if keyBlock == nil {
		return nil, fmt.Errorf("%w: %s: no PRIVATE KEY block", ErrBadTLS, key)
	}
	pair, err := tls.X509KeyPair(certs, keyBlock)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadTLS, key, err)
	}
	return &pair, nil
}

func pemPool(key string, data []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%w: %s: no PEM certificate", ErrBadTLS, key)
	}
	return pool, nil
}
