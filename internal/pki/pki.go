package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// DefaultValidity is how long a certificate is valid when Options.Validity
// and NotAfter are not set.
const DefaultValidity = 365 * 24 * time.Hour

// Options describe a certificate to issue. Zero values mean defaults.
type Options struct {
	// CommonName is the subject's CN; Organization and OrganizationalUnit
	// are added to the subject when set (Kafka's ssl.principal.mapping.rules
	// see the whole distinguished name).
	CommonName         string
	Organization       string
	OrganizationalUnit string
	// Hosts are DNS names and IP addresses the certificate is for (SANs).
	Hosts []string
	// Client and Server choose the extended key usages; neither means both.
	Client, Server bool
	// Validity is the lifetime from now; NotBefore/NotAfter, when set,
	// replace it (an expired certificate: NotAfter in the past).
	Validity            time.Duration
	NotBefore, NotAfter time.Time
}

// CA is a self-signed certificate authority.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
}

// Leaf is a certificate issued by a CA, with its private key.
type Leaf struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// CertPEM is the leaf followed by its CA; KeyPEM the PKCS8 key.
	CertPEM, KeyPEM []byte
	ca              *CA
}

// NewCA makes a certificate authority named name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(Options{CommonName: name, Validity: 10 * DefaultValidity})
	if err != nil {
		return nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("pki: self-sign %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: pemBlock("CERTIFICATE", der)}, nil
}

// Issue makes a certificate signed by the CA.
func (ca *CA) Issue(o Options) (*Leaf, error) {
	if o.CommonName == "" {
		return nil, errors.New("pki: Issue: CommonName is required")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(o)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if !o.Client && !o.Server {
		o.Client, o.Server = true, true
	}
	if o.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if o.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	for _, h := range o.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("pki: issue %s: %w", o.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	chain := append(pemBlock("CERTIFICATE", der), ca.CertPEM...)
	return &Leaf{Cert: cert, Key: key, CertPEM: chain, KeyPEM: pemBlock("PRIVATE KEY", pkcs8), ca: ca}, nil
}

// Pool is a certificate pool holding the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// TLSCertificate is the leaf as crypto/tls takes it (chain included).
func (l *Leaf) TLSCertificate() tls.Certificate {
	return tls.Certificate{
		Certificate: [][]byte{l.Cert.Raw, l.ca.Cert.Raw},
		PrivateKey:  l.Key,
		Leaf:        l.Cert,
	}
}

// WritePEM writes the key and the chain into one file (Kafka's PEM keystore,
// ssl.keystore.type=PEM) at path, mode 0600.
func (l *Leaf) WritePEM(path string) error {
	return writeFile(path, append(append([]byte{}, l.KeyPEM...), l.CertPEM...))
}

// WritePEM writes the CA's certificate (a PEM truststore) at path.
func (ca *CA) WritePEM(path string) error { return writeFile(path, ca.CertPEM) }

// WritePKCS12 writes the leaf's key and chain as a PKCS12 keystore
// protected by password.
func (l *Leaf) WritePKCS12(path, password string) error {
	data, err := pkcs12.Modern.Encode(l.Key, l.Cert, []*x509.Certificate{l.ca.Cert}, password)
	if err != nil {
		return fmt.Errorf("pki: PKCS12 keystore: %w", err)
	}
	return writeFile(path, data)
}

// WriteTrustPKCS12 writes the CA's certificate as a PKCS12 truststore.
func (ca *CA) WriteTrustPKCS12(path, password string) error {
	data, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert}, password)
	if err != nil {
		return fmt.Errorf("pki: PKCS12 truststore: %w", err)
	}
	return writeFile(path, data)
}

func template(o Options) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	notBefore, notAfter := now.Add(-time.Hour), now.Add(DefaultValidity)
	if o.Validity > 0 {
		notAfter = now.Add(o.Validity)
	}
	if !o.NotBefore.IsZero() {
		notBefore = o.NotBefore
	}
	if !o.NotAfter.IsZero() {
		notAfter = o.NotAfter
	}
	subject := pkix.Name{CommonName: o.CommonName}
	if o.Organization != "" {
		subject.Organization = []string{o.Organization}
	}
	if o.OrganizationalUnit != "" {
		subject.OrganizationalUnit = []string{o.OrganizationalUnit}
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    notBefore,
		NotAfter:     notAfter,
	}, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	// A rename, so that a reloading reader never sees half a file.
	return os.Rename(tmp, path)
}
