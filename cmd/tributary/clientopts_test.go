package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/brokertest"
)

// cliResult is what one run of the command tree printed and returned.
type cliResult struct {
	stdout, stderr string
	err            error
}

// runCLI runs the tributary command tree with args and stdin, bounded by
// timeout so that a hung client fails the test instead of the suite.
func runCLI(t testing.TB, timeout time.Duration, stdin string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(ctx)
	return cliResult{stdout: out.String(), stderr: errOut.String(), err: err}
}

// TestBadInputNamesTheFlag checks that every bad flag fails before any
// network traffic, with a one-line error that names the flag. The bootstrap
// address points at a closed port: reaching the network would hang or fail
// differently.
func TestBadInputNamesTheFlag(t *testing.T) {
	const bs = "127.0.0.1:1"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown offset word", []string{"consume", "--bootstrap", bs, "--topic", "t", "--offset", "oldest"}, "--offset \"oldest\""},
		{"negative offset", []string{"consume", "--bootstrap", bs, "--topic", "t", "--offset", "-3"}, "--offset \"-3\""},
		{"consume without topic", []string{"consume", "--bootstrap", bs}, "--topic is required"},
		{"produce without topic", []string{"produce", "--bootstrap", bs}, "--topic is required"},
		{"bench without topic", []string{"bench", "produce", "--bootstrap", bs, "--records", "1"}, "--topic is required"},
		{"create without topic", []string{"topics", "create", "--bootstrap", bs}, "--topic is required"},
		{"delete without topic", []string{"topics", "delete", "--bootstrap", bs}, "--topic is required"},
		{"bad acks", []string{"produce", "--bootstrap", bs, "--topic", "t", "--acks", "2"}, "--acks \"2\""},
		{"bad acks in bench", []string{"bench", "produce", "--bootstrap", bs, "--topic", "t", "--records", "1", "--acks", "leader"}, "--acks \"leader\""},
		{"bad compression", []string{"produce", "--bootstrap", bs, "--topic", "t", "--compression", "brotli"}, "--compression \"brotli\""},
		{"missing bootstrap", []string{"topics", "list"}, "--bootstrap is required"},
		{"bootstrap without port", []string{"topics", "list", "--bootstrap", "localhost"}, "--bootstrap \"localhost\""},
		{"bad topic name", []string{"consume", "--bootstrap", bs, "--topic", "a/b"}, "--topic \"a/b\""},
		{"zero partitions", []string{"topics", "create", "--bootstrap", bs, "--topic", "t", "--partitions", "0"}, "--partitions \"0\""},
		{"config without value", []string{"topics", "create", "--bootstrap", bs, "--topic", "t", "--config", "retention.ms"}, "--config \"retention.ms\""},
		{"config twice", []string{"topics", "create", "--bootstrap", bs, "--topic", "t", "--config", "a=1", "--config", "a=2"}, "given twice"},
		{"bench zero records", []string{"bench", "consume", "--bootstrap", bs, "--topic", "t"}, "--records \"0\""},
		{"e2e records too small", []string{"bench", "e2e", "--bootstrap", bs, "--topic", "t", "--records", "5", "--record-size", "4"}, "--record-size \"4\""},
		{"bench zero throughput", []string{"bench", "produce", "--bootstrap", bs, "--topic", "t", "--records", "5", "--throughput", "0"}, "--throughput \"0\""},
		{"negative max messages", []string{"consume", "--bootstrap", bs, "--topic", "t", "--max-messages", "-1"}, "--max-messages \"-1\""},
		{"not a number", []string{"consume", "--bootstrap", bs, "--topic", "t", "--partition", "x"}, "\"--partition\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runCLI(t, 10*time.Second, "", tc.args...)
			if res.err == nil {
				t.Fatalf("%v: no error; stdout %q", tc.args, res.stdout)
			}
			msg := res.err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q does not contain %q", msg, tc.want)
			}
			if strings.Contains(msg, "\n") {
				t.Fatalf("error %q is more than one line", msg)
			}
			if res.stdout != "" {
				t.Fatalf("bad input printed to stdout: %q", res.stdout)
			}
		})
	}
}

func TestBadFlagErrorsAreMarked(t *testing.T) {
	_, err := parseAcks("all-of-them")
	if !errors.Is(err, errBadFlag) {
		t.Fatalf("parseAcks error %v is not errBadFlag", err)
	}
}

func TestParseAcks(t *testing.T) {
	cases := map[string]kgo.Acks{"-1": kgo.AllISRAcks(), "all": kgo.AllISRAcks(), "0": kgo.NoAck(), "1": kgo.LeaderAck()}
	for in, want := range cases {
		got, err := parseAcks(in)
		if err != nil || got != want {
			t.Errorf("parseAcks(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestParseCompression(t *testing.T) {
	for _, name := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		if _, err := parseCompression(name); err != nil {
			t.Errorf("parseCompression(%q): %v", name, err)
		}
	}
}

func TestProducerFlagsIdempotence(t *testing.T) {
	// kgo rejects acks 0/1 with idempotence on; the options must build a
	// client for every acks value.
	for _, acks := range []string{"-1", "0", "1"} {
		p := producerFlags{acks: acks, compression: "lz4", lingerMs: 5, batchBytes: 16384, maxBuffered: 10, delivery: time.Second}
		if err := p.validate(); err != nil {
			t.Fatalf("acks %s: %v", acks, err)
		}
		cl, err := kgo.NewClient(append(p.kgoOpts(), kgo.SeedBrokers("127.0.0.1:1"))...)
		if err != nil {
			t.Fatalf("acks %s: client options rejected: %v", acks, err)
		}
		cl.Close()
	}
}

func TestBootstrapList(t *testing.T) {
	o := clientOptions{bootstrap: " a:1, b:2 ,", requestTimeout: time.Second}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(o.brokers(), "|"); got != "a:1|b:2" {
		t.Fatalf("brokers = %q, want a:1|b:2", got)
	}
}

func TestHelpListsCommands(t *testing.T) {
	res := runCLI(t, 5*time.Second, "", "--help")
	if res.err != nil {
		t.Fatal(res.err)
	}
	for _, sub := range []string{"topics", "produce", "consume", "bench"} {
		if !strings.Contains(res.stdout, sub) {
			t.Errorf("help does not list %q:\n%s", sub, res.stdout)
		}
	}
}

// walkCommands calls fn for every command of the tree under root.
func walkCommands(root *cobra.Command, fn func(*cobra.Command)) {
	fn(root)
	for _, c := range root.Commands() {
		walkCommands(c, fn)
	}
}

// TestBootstrapServerEverywhere: every command that takes --bootstrap also
// takes Kafka's spelling, --bootstrap-server, for the same value.
func TestBootstrapServerEverywhere(t *testing.T) {
	var with []string
	walkCommands(newRootCommand(), func(c *cobra.Command) {
		if c.Flags().Lookup("bootstrap") == nil {
			return
		}
		with = append(with, c.CommandPath())
		if err := c.ParseFlags([]string{"--bootstrap-server", "h:9092"}); err != nil {
			t.Errorf("%s --bootstrap-server: %v", c.CommandPath(), err)
			return
		}
		if got := c.Flags().Lookup("bootstrap").Value.String(); got != "h:9092" {
			t.Errorf("%s --bootstrap-server h:9092 set --bootstrap to %q", c.CommandPath(), got)
		}
	})
	for _, want := range []string{"tributary consume", "tributary produce", "tributary topics list", "tributary topics delete-records", "tributary bench produce"} {
		if !slices.Contains(with, want) {
			t.Errorf("%q is not among the commands with --bootstrap: %v", want, with)
		}
	}

	bs := brokertest.New(t).Addr()
	mustRun(t, "", "topics", "create", "--bootstrap-server", bs, "--topic", "spelt")
	if out := mustRun(t, "", "topics", "list", "--bootstrap-server", bs).stdout; out != "spelt\n" {
		t.Fatalf("topics list --bootstrap-server printed %q", out)
	}
}

// TestRequiredFlagsNamedNotQuoted: a required flag left out is named as
// required, not quoted with the placeholder its variable holds, and its
// help line shows no default.
func TestRequiredFlagsNamedNotQuoted(t *testing.T) {
	const bs = "127.0.0.1:1"
	for _, tc := range []struct {
		args      []string
		want, not string
	}{
		{[]string{"topics", "delete-records", "--bootstrap", bs, "--topic", "t"}, "bad flag value: --offset is required (an offset, or -1 for the high watermark)", `"-2"`},
		{[]string{"topics", "alter", "--bootstrap", bs, "--topic", "t"}, "bad flag value: --partitions is required (the new partition count)", `"0"`},
		{[]string{"consume", "--bootstrap", bs}, "bad flag value: --topic is required (a topic name)", `""`},
	} {
		res := runCLI(t, 10*time.Second, "", tc.args...)
		if res.err == nil || res.err.Error() != tc.want || strings.Contains(res.err.Error(), tc.not) {
			t.Errorf("%v: err %v, want %q", tc.args, res.err, tc.want)
		}
	}
	// A value the user typed is still quoted.
	res := runCLI(t, 10*time.Second, "", "topics", "delete-records", "--bootstrap", bs, "--topic", "t", "--offset", "-2")
	if res.err == nil || !strings.Contains(res.err.Error(), `--offset "-2": must be an offset`) {
		t.Errorf("--offset -2: err %v", res.err)
	}

	// Help: no flag says it is required and shows a default.
	walkCommands(newRootCommand(), func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if !strings.Contains(f.Usage, "required") || strings.Contains(f.Usage, "required unless") {
				return
			}
			var help bytes.Buffer
			fs := pflag.NewFlagSet("", pflag.ContinueOnError)
			fs.AddFlag(f)
			fs.SetOutput(&help)
			fs.PrintDefaults()
			if strings.Contains(help.String(), "(default ") {
				t.Errorf("%s: a required flag shows a default: %s", c.CommandPath(), strings.TrimSpace(help.String()))
			}
		})
	})
}

// TestCommandConfigBootstrapNamed: a bad address from --command-config is
// reported as the file's bootstrap.servers, not as an empty --bootstrap.
func TestCommandConfigBootstrapNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(path, []byte("bootstrap.servers=brokerhost\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := runCLI(t, 10*time.Second, "", "topics", "list", "--command-config", path)
	want := "bad flag value: --command-config " + path + `: bootstrap.servers "brokerhost": want HOST:PORT`
	if res.err == nil || res.err.Error() != want {
		t.Fatalf("err %v, want %s", res.err, want)
	}
}

func TestInvocationName(t *testing.T) {
	for argv0, want := range map[string]string{
		"tributary":                            "tributary",
		"bin/tributary":                        "bin/tributary",
		"./tributary":                          "./tributary",
		"/opt/tributary/bin/tributary":         "/opt/tributary/bin/tributary",
		"/tmp/go-build123/b001/exe/tributary":  "tributary", // go run
		"/tmp/go-build123/b001/tributary.test": "tributary", // a test binary
		"/home/a b/bin/tributary":              `'/home/a b/bin/tributary'`,
		"/home/it's/tributary":                 `'/home/it'\''s/tributary'`,
	} {
		if got := invocationName(argv0); got != want {
			t.Errorf("invocationName(%q) = %q, want %q", argv0, got, want)
		}
	}
}
