package testenv

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// Environment variables naming the cluster.env files of the Kerberized test
// HDFS clusters (testing/hdfs/start.sh --kerberos), one per data transfer
// protection, set by scripts/with-servers.sh.
const (
	// EnvHDFSSecurePrivacy: dfs.data.transfer.protection=privacy with
	// dfs.encrypt.data.transfer.cipher.suites=AES/CTR/NoPadding.
	EnvHDFSSecurePrivacy = "TRIBUTARY_TEST_HDFS_SECURE_PRIVACY_ENV"
	// EnvHDFSSecureAuthentication: dfs.data.transfer.protection=authentication.
	EnvHDFSSecureAuthentication = "TRIBUTARY_TEST_HDFS_SECURE_AUTHENTICATION_ENV"
)

// KerberizedHDFS describes a Kerberized test HDFS and its KDC, as its
// cluster.env says.
type KerberizedHDFS struct {
	Addr              string // NameNode RPC, 127.0.0.1:PORT
	NameNodePrincipal string // hdfs/localhost@REALM
	Protection        string // dfs.data.transfer.protection
	CipherSuites      string // dfs.encrypt.data.transfer.cipher.suites, "" for none
	Krb5Conf          string // the KDC's krb5.conf
	Realm             string
	ClientPrincipal   string // tributary@REALM
	ClientKeytab      string
	HDFSKeytab        string // the NameNode's keys (tests decrypt its tickets)
}

// KerberizedHDFSProtections are the protections KerberizedHDFS knows.
var KerberizedHDFSProtections = []string{"privacy", "authentication"}

// SecureHDFS returns the Kerberized test HDFS whose data transfer
// protection is protection ("privacy" or "authentication"), or fails t.
func SecureHDFS(t testing.TB, protection string) KerberizedHDFS {
	t.Helper()
	env := map[string]string{"privacy": EnvHDFSSecurePrivacy, "authentication": EnvHDFSSecureAuthentication}[protection]
	if env == "" {
		t.Fatalf("testenv.SecureHDFS(%q): want privacy or authentication", protection)
	}
	file := os.Getenv(env)
	if file == "" {
		t.Fatalf("the Kerberized HDFS (%s) is not running: %s is unset; run the tests through `make test` "+
			"(it starts one with testing/hdfs/start.sh --kerberos)", protection, env)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("the Kerberized HDFS (%s): %s=%s: %v", protection, env, file, err)
	}
	defer f.Close()
	kv := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			kv[k] = v
		}
	}
	c := KerberizedHDFS{Addr: kv["HDFS_ADDR"], NameNodePrincipal: kv["HDFS_NAMENODE_PRINCIPAL"],
		Protection: kv["HDFS_DATA_TRANSFER_PROTECTION"], CipherSuites: kv["HDFS_ENCRYPT_CIPHER_SUITES"],
		Krb5Conf: kv["KRB5_CONFIG"], Realm: kv["KRB5_REALM"], ClientPrincipal: kv["KRB5_CLIENT_PRINCIPAL"],
		ClientKeytab: kv["KRB5_CLIENT_KEYTAB"], HDFSKeytab: kv["KRB5_HDFS_KEYTAB"]}
	if err := sc.Err(); err != nil || c.Addr == "" || c.ClientKeytab == "" || c.Krb5Conf == "" {
		t.Fatalf("the Kerberized HDFS (%s): %s=%s is incomplete (%v): %v", protection, env, file, err, kv)
	}
	if c.Protection != protection {
		t.Fatalf("%s=%s: the cluster's protection is %q, want %q", env, file, c.Protection, protection)
	}
	return c
}
