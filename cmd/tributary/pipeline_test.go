package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/jobs/tables"
)

func TestPipelineRejectsBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--loader", "sometimes"}, `--loader "sometimes"`},
		{[]string{"--brokers", "0"}, `--brokers "0"`},
		{[]string{"--audit-window", "10ms"}, `--audit-window "10ms"`},
		{[]string{"--rate", "0"}, `--rate "0"`},
		{[]string{"--datacenters", "dc1,analytics"}, `datacenter "analytics"`},
		{[]string{"--zookeeper", "127.0.0.1:2181/bad//path"}, "zookeeper"},
		{[]string{"--hdfs", "namenode"}, `hdfs "namenode"`},
		{[]string{"--log-level", "loud"}, "--log-level"},
	} {
		for _, sub := range []string{"up", "demo"} {
			res := runCLI(t, 10*time.Second, "", append([]string{"pipeline", sub, "--dir", t.TempDir()}, c.args...)...)
			if res.err == nil || !strings.Contains(res.err.Error(), c.want) {
				t.Errorf("pipeline %s %v: error %v, want one naming %q", sub, c.args, res.err, c.want)
			}
		}
	}
}

// TestPipelineUp: `tributary pipeline up` prints where every part listens,
// serves the registry and the audit dashboard, and stops cleanly when its
// context ends (as on Ctrl-C).
func TestPipelineUp(t *testing.T) {
	banner, stop := startPipelineUp(t, "--dir", t.TempDir(), "--brokers", "1", "--rate", "20", "--loader", "continuous")
	defer stop()
	for _, want := range []string{"cluster dc1", "cluster dc2", "cluster analytics", "schema registry    http://",
		"producers          dc1, dc2, 20 page views/s", "loader             analytics -> file://"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	for _, u := range []string{bannerURL(t, banner, "schema registry") + "/subjects", bannerURL(t, banner, "audit dashboard")} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Errorf("GET %s: %d %q", u, resp.StatusCode, body)
		}
	}
}

// TestPipelineUpSecure: `pipeline up --secure` serves the registry and the
// dashboard over HTTPS, refusing anonymous requests, and the banner's
// "try" line works: the admin's generated client properties file, given
// as --command-config, lists the analytics cluster's topics over SASL_SSL.
func TestPipelineUpSecure(t *testing.T) {
	dir := t.TempDir()
	banner, stop := startPipelineUp(t, "--dir", dir, "--brokers", "1", "--rate", "20", "--loader", "continuous", "--secure")
	defer stop()
	for _, want := range []string{"schema registry    https://", "audit dashboard    https://", "SASL_SSL SCRAM-SHA-512", "mirror target"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	ca, err := os.ReadFile(filepath.Join(dir, "secure", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, u := range []string{bannerURL(t, banner, "schema registry") + "/subjects", bannerURL(t, banner, "audit dashboard")} {
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("anonymous GET %s: %d, want 401", u, resp.StatusCode)
		}
	}
	m := regexp.MustCompile(`tributary consume --bootstrap (\S+) --command-config (\S+) `).FindStringSubmatch(banner)
	if m == nil {
		t.Fatalf("no try line in the banner:\n%s", banner)
	}
	var out, errOut bytes.Buffer
	cmd := newRootCommand()
	cmd.SetArgs([]string{"topics", "list", "--bootstrap", m[1], "--command-config", m[2]})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatalf("topics list with %s: %v\n%s", m[2], err, errOut.String())
	}
	if !strings.Contains(out.String(), "pageviews") {
		t.Errorf("topics list over SASL_SSL: %q, want pageviews", out.String())
	}
}

// startPipelineUp runs `tributary pipeline up` with args until its banner
// is printed and returns the banner; stop ends it (as Ctrl-C does) and
// fails the test unless it stops cleanly.
func startPipelineUp(t *testing.T, args ...string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &testproc.SyncBuffer{}, &testproc.SyncBuffer{}
	cmd := newRootCommand()
	cmd.SetArgs(append([]string{"pipeline", "up", "--log-level", "warn"}, args...))
	cmd.SetIn(strings.NewReader(""))
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.After(2 * time.Minute)
	for !strings.Contains(out.String(), "Press Ctrl-C to stop.") {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("pipeline up exited before its banner: %v\n%s\n%s", err, out, errOut)
		case <-deadline:
			cancel()
			t.Fatalf("no banner within 2 minutes:\n%s\n%s", out, errOut)
		case <-time.After(50 * time.Millisecond):
		}
	}
	stop := func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("pipeline up: %v\n%s", err, errOut)
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("pipeline up did not stop within 2 minutes of its context ending")
		}
	}
	return out.String(), stop
}

// bannerURL returns the URL the banner prints after label.
func bannerURL(t *testing.T, s, label string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(label) + ` +(\S+)$`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %q line in:\n%s", label, s)
	}
	return m[1]
}

// TestFlagTypeNames: pflag shows the back-quoted words of a flag's usage as
// its type name (`--loader tributary loader run`); every flag of every
// command must show its own type instead, and `pipeline up --help` shows
// `--loader string`.
func TestFlagTypeNames(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				name, _ := pflag.UnquoteUsage(f)
				t.Errorf("%s --%s: usage has back quotes, so --help shows its type as %q", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
	res := runCLI(t, 10*time.Second, "", "pipeline", "up", "--help")
	for _, want := range []string{"--loader string ", "--hive-metastore string ", "--compact-interval duration "} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("pipeline up --help lacks %q:\n%s", want, res.stdout)
		}
	}
}

// TestPipelineHiveMetastoreRefused: a --hive-metastore that is not
// thrift://HOST:PORT, or whose port nobody serves, fails the start with one
// line naming the flag, and so does one without compaction.
func TestPipelineHiveMetastoreRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "thrift://" + ln.Addr().String()
	ln.Close()
	for _, c := range []struct {
		sub  string
		args []string
		want string
	}{
		{"up", []string{"--hive-metastore", "http://127.0.0.1:9083"}, `--hive-metastore "http://127.0.0.1:9083": tables: invalid configuration: hive.metastore.uris: "http://127.0.0.1:9083" is not thrift://host:port`},
		{"demo", []string{"--hive-metastore", "thrift://127.0.0.1"}, `--hive-metastore "thrift://127.0.0.1": `},
		{"demo", []string{"--hive-metastore", closed, "--compact-interval", "0"}, `--compact-interval "0s": --hive-metastore needs compaction`},
		{"up", []string{"--hive-metastore", closed, "--hive-database", "no-dashes"}, `--hive-metastore "` + closed + `": tables: invalid configuration: hive.database="no-dashes"`},
		{"up", []string{"--hive-metastore", closed}, `--hive-metastore "` + closed + `": cannot reach it: `},
	} {
		args := append([]string{"pipeline", c.sub, "--dir", t.TempDir(), "--brokers", "1", "--loader", "continuous"}, c.args...)
		res := runCLI(t, 2*time.Minute, "", args...)
		if res.err == nil || !strings.Contains(res.err.Error(), c.want) || strings.Contains(res.err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line with %q", args, res.err, c.want)
		}
	}
}

// TestPipelineUpHiveMetastore: `pipeline up --hive-metastore` (the real
// metastore of make test) names the table and a spark-sql line to query it
// in its banner, and writes DIR/tables.properties, the tables configuration
// `jobs compact --tables-config` takes, with the metastore, the database
// and the pipeline's registry.
func TestPipelineUpHiveMetastore(t *testing.T) {
	uri := testenv.HiveMetastore(t)
	dir := t.TempDir()
	db := fmt.Sprintf("cmd_pipeline_%d", time.Now().UnixNano())
	banner, stop := startPipelineUp(t, "--dir", dir, "--brokers", "1", "--rate", "5", "--loader", "continuous",
		"--hive-metastore", uri, "--hive-database", db)
	defer stop()
	table := db + ".pageviews"
	for _, want := range []string{"tables             " + table + " in " + uri,
		"query            spark-sql --conf spark.sql.catalogImplementation=hive --conf spark.hadoop.hive.metastore.uris=" + uri +
			` -e "SELECT hour, count(*) FROM ` + table + ` GROUP BY hour ORDER BY hour"`} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	f, err := os.Open(filepath.Join(dir, "tables.properties"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := properties.Read(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tables.ConfigFromProperties(properties.New(m))
	if err != nil || !cfg.Enabled || strings.Join(cfg.URIs, ",") != uri || cfg.Database != db {
		t.Errorf("tables.properties %v: %+v, %v", m, cfg, err)
	}
	if reg := bannerURL(t, banner, "schema registry"); m["schema.registry.url"] != reg {
		t.Errorf("tables.properties has schema.registry.url %q, the registry is %s", m["schema.registry.url"], reg)
	}
}
