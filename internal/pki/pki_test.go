package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// TestHandshake: a server and a client certificate of one CA complete a
// mutual TLS handshake over loopback, and the client's subject is what the
// server sees.
func TestHandshake(t *testing.T) {
	ca, err := NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Issue(Options{CommonName: "broker", Hosts: []string{"127.0.0.1", "localhost"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := ca.Issue(Options{CommonName: "mirror", Organization: "tributary", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{srv.TLSCertificate()},
		ClientCAs:    ca.Pool(),
		ClientAuth:   tls.RequireAndVerifyClientCert,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	subject := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			subject <- "accept: " + err.Error()
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		if err := tc.Handshake(); err != nil {
			subject <- "handshake: " + err.Error()
			return
		}
		subject <- tc.ConnectionState().PeerCertificates[0].Subject.String()
		_, _ = io.Copy(io.Discard, c)
	}()
	conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{
		RootCAs:      ca.Pool(),
		Certificates: []tls.Certificate{cli.TLSCertificate()},
		ServerName:   "127.0.0.1",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	select {
	case got := <-subject:
		if got != "CN=mirror,O=tributary" {
			t.Errorf("server saw %q, want CN=mirror,O=tributary", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no handshake within 30s")
	}
}

// TestFiles: the PEM keystore holds a key and a chain crypto/tls loads; the
// PKCS12 stores decode with their password to the same certificates.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	ca, err := NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(Options{CommonName: "broker-1", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	pemPath := filepath.Join(dir, "broker.pem")
	if err := leaf.WritePEM(pemPath); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pemPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(data), "BEGIN CERTIFICATE"); got != 2 {
		t.Errorf("PEM keystore has %d certificates, want the leaf and the CA", got)
	}
	pair, err := tls.X509KeyPair(data, data)
	if err != nil {
		t.Fatalf("crypto/tls cannot load the PEM keystore: %v", err)
	}
	if x, _ := x509.ParseCertificate(pair.Certificate[0]); x == nil || x.Subject.CommonName != "broker-1" {
		t.Errorf("first certificate is not the leaf")
	}
	if err := ca.WritePEM(filepath.Join(dir, "ca.pem")); err != nil {
		t.Fatal(err)
	}
	caData, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if b, _ := pem.Decode(caData); b == nil || b.Type != "CERTIFICATE" {
		t.Errorf("CA file is not a PEM certificate")
	}
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("leaf does not verify against its CA: %v", err)
	}

	if err := leaf.WritePKCS12(filepath.Join(dir, "broker.p12"), "s3cret"); err != nil {
		t.Fatal(err)
	}
	p12, _ := os.ReadFile(filepath.Join(dir, "broker.p12"))
	key, cert, chain, err := pkcs12.DecodeChain(p12, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	if key == nil || !cert.Equal(leaf.Cert) || len(chain) != 1 || !chain[0].Equal(ca.Cert) {
		t.Errorf("PKCS12 keystore does not hold the leaf, its key and the CA")
	}
	if _, _, _, err := pkcs12.DecodeChain(p12, "wrong"); err == nil {
		t.Errorf("PKCS12 keystore opened with a wrong password")
	}
	if err := ca.WriteTrustPKCS12(filepath.Join(dir, "trust.p12"), "s3cret"); err != nil {
		t.Fatal(err)
	}
	tp12, _ := os.ReadFile(filepath.Join(dir, "trust.p12"))
	certs, err := pkcs12.DecodeTrustStore(tp12, "s3cret")
	if err != nil || len(certs) != 1 || !certs[0].Equal(ca.Cert) {
		t.Errorf("PKCS12 truststore: %v, %d certs", err, len(certs))
	}
}

// TestExpired: NotAfter in the past gives a certificate a verifier refuses.
func TestExpired(t *testing.T) {
	ca, err := NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	old, err := ca.Issue(Options{CommonName: "old", NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = old.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	var inv x509.CertificateInvalidError
	if !errors.As(err, &inv) || inv.Reason != x509.Expired {
		t.Errorf("expired certificate verified with %v", err)
	}
}
