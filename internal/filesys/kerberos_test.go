package filesys_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/filesys/filesystest"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestKerberizedHDFS runs the conformance suite on the Kerberized clusters,
// with privacy (AES) and with authentication data transfer protection.
func TestKerberizedHDFS(t *testing.T) {
	for _, protection := range testenv.KerberizedHDFSProtections {
		t.Run(protection, func(t *testing.T) {
			filesystest.Run(t, func(t *testing.T) (filesys.FS, string) {
				fsys, base, _, _ := filesystest.KerberizedHDFS(t, protection)
				return fsys, base
			})
		})
	}
}

// TestKerberosWrongKeytab: a keytab with other keys than the KDC's fails
// the open with ErrKerberos naming connect.hdfs.keytab.
func TestKerberosWrongKeytab(t *testing.T) {
	c := testenv.SecureHDFS(t, "authentication")
	opts := filesystest.KerberosOptions(c)
	opts.Kerberos.Keytab = filesystest.WrongKeytab(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fsys, _, err := filesys.OpenWith(ctx, "hdfs://"+c.Addr+"/x", opts)
	if err == nil {
		fsys.Close()
		t.Fatal("opened a Kerberized HDFS with a wrong keytab")
	}
	if !errors.Is(err, filesys.ErrKerberos) || !strings.Contains(err.Error(), "connect.hdfs.keytab "+opts.Kerberos.Keytab) {
		t.Fatalf("wrong keytab: %v, want ErrKerberos naming connect.hdfs.keytab and the file", err)
	}
	t.Logf("wrong keytab: %v", err)
}

// TestKerberosWithoutCredentials: a client without Kerberos is refused by
// the Kerberized NameNode.
func TestKerberosWithoutCredentials(t *testing.T) {
	c := testenv.SecureHDFS(t, "authentication")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if fsys, err := filesys.OpenHDFS(ctx, []string{c.Addr}, "tributary"); err == nil {
		fsys.Close()
		t.Fatal("a Kerberized NameNode answered a client without Kerberos")
	}
}

// TestKerberosTicketRenewal gives the client tickets of 15 s (its own
// krb5.conf asks the KDC for that lifetime), waits until the service
// ticket of its NameNode connection has expired, breaks the connection and
// checks that the FS reconnects with a new ticket got from the keytab.
func TestKerberosTicketRenewal(t *testing.T) {
	c := testenv.SecureHDFS(t, "authentication")
	conf, err := os.ReadFile(c.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	short := strings.Replace(string(conf), "[libdefaults]\n", "[libdefaults]\n    ticket_lifetime = 15s\n", 1)
	if short == string(conf) {
		t.Fatalf("%s has no [libdefaults] section", c.Krb5Conf)
	}
	shortConf := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(shortConf, []byte(short), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err == nil {
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
		return conn, err
	}
	dials := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(conns)
	}
	opts := filesystest.KerberosOptions(c)
	opts.Kerberos.Krb5Conf = shortConf
	opts.Kerberos.RenewPeriod = 5 * time.Second
	opts = filesys.WithNamenodeDial(opts, dial)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fsys, err := filesys.OpenHDFSWith(ctx, []string{c.Addr}, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	base := "/tributary-test/renewal-" + hex.EncodeToString(b[:])
	t.Cleanup(func() { _ = fsys.RemoveAll(base) })
	if err := filesys.WriteFile(fsys, path.Join(base, "before"), []byte("before")); err != nil {
		t.Fatal(err)
	}

	hdfsKeys, err := keytab.Load(c.HDFSKeytab)
	if err != nil {
		t.Fatal(err)
	}
	spn, _, _ := strings.Cut(c.NameNodePrincipal, "@")
	// ticketTimes decrypts the cached service ticket of the NameNode with
	// the NameNode's keys: its start and end.
	ticketTimes := func() (time.Time, time.Time) {
		t.Helper()
		tkt, _, ok := filesys.KerberosClientOf(fsys).GetCachedTicket(spn)
		if !ok {
			t.Fatalf("no live service ticket for %s cached", spn)
		}
		sname := types.NewPrincipalName(nametype.KRB_NT_SRV_INST, spn)
		if err := tkt.DecryptEncPart(hdfsKeys, &sname); err != nil {
			t.Fatalf("decrypting the service ticket: %v", err)
		}
		ep := tkt.DecryptedEncPart
		if ep.StartTime.IsZero() { // optional: then the auth time
			return ep.AuthTime, ep.EndTime
		}
		return ep.StartTime, ep.EndTime
	}
	start, end := ticketTimes()
	if life := end.Sub(start); life > time.Minute {
		t.Fatalf("the service ticket lives %v: the KDC ignored ticket_lifetime = 15s", life)
	}
	testenv.WaitFor(t, 2*time.Minute, "the first service ticket to expire", func() (bool, string) {
		return time.Now().After(end.Add(time.Second)), "ends " + end.String()
	})
	before := dials()
	mu.Lock()
	for _, conn := range conns {
		conn.Close()
	}
	mu.Unlock()
	// colinmarc/hdfs fails calls for a few seconds after a NameNode
	// connection broke (its back-off), then redials.
	testenv.WaitFor(t, time.Minute, "the FS to reconnect to the NameNode", func() (bool, string) {
		_, err := fsys.Stat(base)
		return err == nil, fmt.Sprint(err)
	})
	if err := filesys.WriteFile(fsys, path.Join(base, "after"), []byte("after")); err != nil {
		t.Fatalf("writing after the first ticket expired: %v", err)
	}
	if got, err := filesys.ReadFile(fsys, path.Join(base, "before")); err != nil || string(got) != "before" {
		t.Fatalf("reading after the first ticket expired: %q, %v", got, err)
	}
	if dials() == before {
		t.Fatal("the FS did not dial the NameNode again after its connection broke")
	}
	_, end2 := ticketTimes()
	if !end2.After(end) {
		t.Fatalf("the new connection's ticket ends %v, not after the expired one's %v", end2, end)
	}
}

// TestHDFSOptionsFromProperties reads Confluent's and Hadoop's keys and
// refuses the protections colinmarc/hdfs v2.4.0 cannot read under.
func TestHDFSOptionsFromProperties(t *testing.T) {
	keytabFile := filepath.Join(t.TempDir(), "k.keytab")
	confFile := filepath.Join(t.TempDir(), "krb5.conf")
	for _, f := range []string{keytabFile, confFile} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	good := map[string]string{
		"hdfs.authentication.kerberos": "true", "connect.hdfs.principal": "etl@EXAMPLE.COM",
		"connect.hdfs.keytab": keytabFile, "krb5.conf": confFile, "hdfs.namenode.principal": "hdfs/_HOST@EXAMPLE.COM",
		"kerberos.ticket.renew.period.ms": "60000", "dfs.data.transfer.protection": "privacy",
		"dfs.encrypt.data.transfer.cipher.suites": "AES/CTR/NoPadding",
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range good {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	parse := func(m map[string]string) (filesys.HDFSOptions, error) {
		p := properties.New(m)
		o := filesys.HDFSOptionsFromProperties(p)
		if err := p.Err(); err != nil {
			return o, err
		}
		if u := p.Unknown(); len(u) > 0 {
			t.Errorf("keys not read: %v", u)
		}
		return o, o.Validate()
	}
	o, err := parse(good)
	if err != nil || o.Kerberos == nil || o.Kerberos.RenewPeriod != time.Minute || o.Kerberos.Principal != "etl@EXAMPLE.COM" {
		t.Fatalf("good: %+v %v", o, err)
	}
	if back, err := parse(o.Properties()); err != nil || !reflect.DeepEqual(back, o) {
		t.Errorf("Properties round trip: %+v %v, want %+v", back, err, o)
	}
	o, err = parse(with("hdfs.authentication.kerberos", "", "hadoop.security.authentication", "kerberos"))
	if err != nil || o.Kerberos == nil {
		t.Fatalf("hadoop.security.authentication=kerberos: %+v %v", o, err)
	}
	for _, tc := range []struct {
		props []string
		key   string
	}{
		{[]string{"dfs.data.transfer.protection", "integrity"}, "dfs.data.transfer.protection=integrity"},
		{[]string{"dfs.encrypt.data.transfer.cipher.suites", ""}, "dfs.encrypt.data.transfer.cipher.suites"},
		{[]string{"dfs.encrypt.data.transfer.cipher.suites", "3DES"}, "dfs.encrypt.data.transfer.cipher.suites"},
		{[]string{"dfs.data.transfer.protection", "secret"}, "dfs.data.transfer.protection"},
		{[]string{"connect.hdfs.keytab", ""}, "connect.hdfs.keytab"},
		{[]string{"connect.hdfs.keytab", keytabFile + ".missing"}, "connect.hdfs.keytab"},
		{[]string{"connect.hdfs.principal", ""}, "connect.hdfs.principal"},
		{[]string{"hdfs.namenode.principal", ""}, "hdfs.namenode.principal"},
		{[]string{"hdfs.namenode.principal", "hdfs@EXAMPLE.COM"}, "hdfs.namenode.principal"},
		{[]string{"krb5.conf", confFile + ".missing"}, "krb5.conf"},
		{[]string{"kerberos.ticket.renew.period.ms", "0"}, "kerberos.ticket.renew.period.ms"},
		{[]string{"hadoop.security.authentication", "simple"}, "hadoop.security.authentication"},
	} {
		_, err := parse(with(tc.props...))
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%v: %v, want an error naming %s", tc.props, err, tc.key)
		}
	}
	// Without Kerberos the Kerberos keys mean nothing and are not checked.
	if o, err := parse(map[string]string{"dfs.data.transfer.protection": "authentication"}); err != nil || o.Kerberos != nil {
		t.Errorf("plain: %+v %v", o, err)
	}
}
