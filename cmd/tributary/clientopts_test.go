package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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
