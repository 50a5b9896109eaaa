package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCertsCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"certs"}, args...))
	err := cmd.Execute()
	return out.String(), err
}

func TestCertsIssuesVerifiableServerAndClient(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	out, err := runCertsCmd(t, "--dir", dir, "--host", "localhost,127.0.0.1", "--server", "broker", "--client", "alice")
	if err != nil {
		t.Fatalf("certs: %v\n%s", err, out)
	}
	for _, f := range []string{"ca.pem", "broker.pem", "alice.pem"} {
		if !strings.Contains(out, filepath.Join(dir, f)) {
			t.Errorf("output does not list %s:\n%s", f, out)
		}
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.pem holds no certificate")
	}
	load := func(name string) *x509.Certificate {
		t.Helper()
		p := filepath.Join(dir, name+".pem")
		// Key and chain in one file, as ssl.keystore.type=PEM reads it.
		pair, err := tls.LoadX509KeyPair(p, p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", p, fi.Mode().Perm(), err)
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf
	}
	server := load("broker")
	for _, host := range []string{"localhost", "127.0.0.1"} {
		if _, err := server.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
			t.Errorf("broker.pem for %s: %v", host, err)
		}
	}
	if _, err := server.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: roots}); err == nil {
		t.Error("broker.pem verifies for a host it was not issued for")
	}
	client := load("alice")
	if client.Subject.CommonName != "alice" {
		t.Errorf("client CN %q, want alice", client.Subject.CommonName)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("alice.pem as a client certificate: %v", err)
	}
}

func TestCertsRefusesToOverwriteWithoutForce(t *testing.T) {
	dir := t.TempDir()
	if out, err := runCertsCmd(t, "--dir", dir); err != nil {
		t.Fatalf("certs: %v\n%s", err, out)
	}
	before, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runCertsCmd(t, "--dir", dir); err == nil || !strings.Contains(err.Error(), "ca.pem exists") {
		t.Fatalf("second run without --force: %v, want an error naming ca.pem", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if !bytes.Equal(before, after) {
		t.Fatal("a refused run changed ca.pem")
	}
	if out, err := runCertsCmd(t, "--dir", dir, "--force"); err != nil {
		t.Fatalf("certs --force: %v\n%s", err, out)
	}
	after, _ = os.ReadFile(filepath.Join(dir, "ca.pem"))
	if bytes.Equal(before, after) {
		t.Fatal("--force did not write a new CA")
	}
}

func TestCertsBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--dir"},
		{[]string{"--dir", dir, "--server", "../x"}, "--server"},
		{[]string{"--dir", dir, "--client", "broker"}, "--client \"broker\""},
		{[]string{"--dir", dir, "--server", "ca"}, "--server \"ca\""},
		{[]string{"--dir", dir, "--validity", "-1h"}, "--validity"},
		{[]string{"--dir", dir, "--host", "a b"}, "--host"},
	} {
		if _, err := runCertsCmd(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("certs %q: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("bad flags wrote %d files", len(entries))
	}
}
