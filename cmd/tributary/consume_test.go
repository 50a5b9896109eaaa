package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/brokertest"
)

func TestParseOffset(t *testing.T) {
	cases := map[string]string{
		"earliest": kgo.NewOffset().AtStart().String(),
		"latest":   kgo.NewOffset().AtEnd().String(),
		"0":        kgo.NewOffset().At(0).String(),
		"42":       kgo.NewOffset().At(42).String(),
	}
	for in, want := range cases {
		got, err := parseOffset(in)
		if err != nil {
			t.Fatalf("parseOffset(%q): %v", in, err)
		}
		if got.String() != want {
			t.Errorf("parseOffset(%q) = %s, want %s", in, got, want)
		}
	}
	for _, bad := range []string{"", "first", "-1", "1.5", "0x10"} {
		if _, err := parseOffset(bad); err == nil {
			t.Errorf("parseOffset(%q) succeeded", bad)
		}
	}
}

func TestRecordFormatter(t *testing.T) {
	recs := []*kgo.Record{
		{Key: []byte("k1"), Value: []byte("v1"), Partition: 2, Offset: 7},
		{Key: nil, Value: []byte("no key"), Partition: 0, Offset: 0},
		{Key: []byte(""), Value: nil, Partition: 1, Offset: 3},
	}
	cases := []struct {
		f    recordFormatter
		want string
	}{
		{recordFormatter{}, "v1\nno key\nnull\n"},
		{recordFormatter{printKey: true, keySeparator: "\t"}, "k1\tv1\nnull\tno key\n\tnull\n"},
		{recordFormatter{printOffset: true}, "Offset:7\tv1\nOffset:0\tno key\nOffset:3\tnull\n"},
		{recordFormatter{printPartition: true, printOffset: true, printKey: true, keySeparator: "="},
			"Partition:2\tOffset:7\tk1=v1\nPartition:0\tOffset:0\tnull=no key\nPartition:1\tOffset:3\t=null\n"},
	}
	for _, tc := range cases {
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		for _, r := range recs {
			tc.f.write(w, r)
		}
		w.Flush()
		if buf.String() != tc.want {
			t.Errorf("%+v printed\n%q\nwant\n%q", tc.f, buf.String(), tc.want)
		}
	}
}

// createTopic creates topic with n partitions through the CLI.
func createTopic(t *testing.T, bs, topic string, n int) {
	t.Helper()
	mustRun(t, "", "topics", "create", "--bootstrap", bs, "--topic", topic, "--partitions", strconv.Itoa(n))
}

func TestProduceConsumeKeysAndValues(t *testing.T) {
	bs := brokertest.New(t).Addr()
	createTopic(t, bs, "kv", 1)

	input := "user1:clicked home\r\nuser2:searched a:b\nuser1:\n:no key text\n"
	res := mustRun(t, input, "produce", "--bootstrap", bs, "--topic", "kv", "--key-separator", ":")
	if res.stdout != "" {
		t.Fatalf("produce printed %q to stdout", res.stdout)
	}

	res = mustRun(t, "", "consume", "--bootstrap", bs, "--topic", "kv", "--offset", "earliest",
		"--max-messages", "4", "--print-key", "--print-offset", "--timeout-ms", "10000")
	want := "Offset:0\tuser1\tclicked home\n" +
		"Offset:1\tuser2\tsearched a:b\n" +
		"Offset:2\tuser1\t\n" +
		"Offset:3\t\tno key text\n"
	if res.stdout != want {
		t.Fatalf("consume printed\n%q\nwant\n%q", res.stdout, want)
	}
	if !strings.Contains(res.stderr, "Processed a total of 4 messages") {
		t.Fatalf("consume stderr %q lacks the total", res.stderr)
	}
}

func TestConsumeOffsets(t *testing.T) {
	bs := brokertest.New(t).Addr()
	createTopic(t, bs, "offsets", 1)
	var lines []string
	for i := range 10 {
		lines = append(lines, fmt.Sprintf("value-%d", i))
	}
	mustRun(t, strings.Join(lines, "\n")+"\n", "produce", "--bootstrap", bs, "--topic", "offsets", "--acks", "1")

	consume := func(extra ...string) string {
		t.Helper()
		args := append([]string{"consume", "--bootstrap", bs, "--topic", "offsets", "--timeout-ms", "700"}, extra...)
		return mustRun(t, "", args...).stdout
	}
	if got, want := consume("--offset", "earliest", "--max-messages", "10"), strings.Join(lines, "\n")+"\n"; got != want {
		t.Errorf("earliest printed %q, want %q", got, want)
	}
	if got, want := consume("--offset", "7", "--max-messages", "3"), "value-7\nvalue-8\nvalue-9\n"; got != want {
		t.Errorf("offset 7 printed %q, want %q", got, want)
	}
	if got, want := consume("--offset", "3", "--max-messages", "2"), "value-3\nvalue-4\n"; got != want {
		t.Errorf("offset 3, max 2 printed %q, want %q", got, want)
	}
	if got := consume("--offset", "latest"); got != "" {
		t.Errorf("latest printed %q, want nothing (no new records)", got)
	}
	// An offset past the end resets to latest, as auto.offset.reset=latest does.
	if got := consume("--offset", "1000"); got != "" {
		t.Errorf("offset 1000 printed %q, want nothing", got)
	}
}

// TestConsumeLatestSeesNewRecords starts a consumer at latest and produces
// until it prints a record: the consumer must skip what was there before it
// started and print what came after.
func TestConsumeLatestSeesNewRecords(t *testing.T) {
	bs := brokertest.New(t).Addr()
	createTopic(t, bs, "live", 1)
	mustRun(t, "old\n", "produce", "--bootstrap", bs, "--topic", "live")

	done := make(chan cliResult, 1)
	go func() {
		done <- runCLI(t, 30*time.Second, "", "consume", "--bootstrap", bs, "--topic", "live",
			"--offset", "latest", "--max-messages", "1", "--timeout-ms", "20000")
	}()
	deadline := time.After(20 * time.Second)
	for {
		mustRun(t, "new\n", "produce", "--bootstrap", bs, "--topic", "live")
		select {
		case res := <-done:
			if res.err != nil {
				t.Fatalf("consume: %v", res.err)
			}
			if res.stdout != "new\n" {
				t.Fatalf("latest consumer printed %q, want new", res.stdout)
			}
			return
		case <-deadline:
			t.Fatal("consumer at latest printed nothing within 20s")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func TestProducePartitionAndCompression(t *testing.T) {
	bs := brokertest.New(t).Addr()
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		topic := "codec-" + codec
		createTopic(t, bs, topic, 3)
		var in strings.Builder
		for i := range 50 {
			fmt.Fprintf(&in, "%s record %d %s\n", codec, i, strings.Repeat("x", i))
		}
		mustRun(t, in.String(), "produce", "--bootstrap", bs, "--topic", topic,
			"--partition", "2", "--compression", codec, "--acks", "-1")
		res := mustRun(t, "", "consume", "--bootstrap", bs, "--topic", topic, "--partition", "2",
			"--offset", "earliest", "--max-messages", "50", "--timeout-ms", "10000", "--print-partition")
		var want strings.Builder
		for _, line := range strings.Split(strings.TrimSuffix(in.String(), "\n"), "\n") {
			want.WriteString("Partition:2\t" + line + "\n")
		}
		if res.stdout != want.String() {
			t.Fatalf("%s: consumed\n%q\nwant\n%q", codec, res.stdout, want.String())
		}
		// Nothing went to the other partitions.
		res = mustRun(t, "", "consume", "--bootstrap", bs, "--topic", topic, "--partition", "0",
			"--offset", "earliest", "--timeout-ms", "500")
		if res.stdout != "" {
			t.Fatalf("%s: partition 0 holds %q", codec, res.stdout)
		}
	}
}

func TestProduceAcksModes(t *testing.T) {
	bs := brokertest.New(t).Addr()
	createTopic(t, bs, "acks", 1)
	for _, acks := range []string{"0", "1", "-1"} {
		mustRun(t, "acks="+acks+"\n", "produce", "--bootstrap", bs, "--topic", "acks", "--acks", acks)
	}
	res := mustRun(t, "", "consume", "--bootstrap", bs, "--topic", "acks", "--offset", "earliest",
		"--max-messages", "3", "--timeout-ms", "10000")
	if res.stdout != "acks=0\nacks=1\nacks=-1\n" {
		t.Fatalf("consumed %q", res.stdout)
	}
}

func TestProduceMissingSeparatorFails(t *testing.T) {
	bs := brokertest.New(t).Addr()
	createTopic(t, bs, "sep", 1)
	res := runCLI(t, 30*time.Second, "a=1\nno separator\nb=2\n", "produce", "--bootstrap", bs, "--topic", "sep", "--key-separator", "=")
	if !errors.Is(res.err, errRecordsFailed) || !strings.Contains(res.err.Error(), "1 of 3") {
		t.Fatalf("err %v, want 1 of 3 records failed", res.err)
	}
	if !strings.Contains(res.stderr, "line 2") {
		t.Fatalf("stderr %q does not name line 2", res.stderr)
	}
	// The good lines were still produced.
	out := mustRun(t, "", "consume", "--bootstrap", bs, "--topic", "sep", "--offset", "earliest",
		"--max-messages", "2", "--print-key", "--key-separator", "=", "--timeout-ms", "10000").stdout
	if out != "a=1\nb=2\n" {
		t.Fatalf("consumed %q", out)
	}
}

// TestProduceToMissingPartitionFails: a --partition the topic does not
// have fails at once, naming the flag, before any record is sent.
func TestProduceToMissingPartitionFails(t *testing.T) {
	bs := brokertest.New(t).Addr()
	createTopic(t, bs, "narrow", 1)
	for _, cmd := range []string{"produce", "consume"} {
		start := time.Now()
		res := runCLI(t, 60*time.Second, "x\n", cmd, "--bootstrap", bs, "--topic", "narrow", "--partition", "5")
		if !errors.Is(res.err, errBadFlag) || !strings.Contains(res.err.Error(), `--partition "5": topic narrow has 1 partitions`) {
			t.Fatalf("%s to partition 5 of a 1-partition topic: err %v", cmd, res.err)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Fatalf("%s took %v to refuse partition 5", cmd, d)
		}
	}
}

// closedPort is an address nothing listens on: a port the kernel gave out
// and that was closed again.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestClientsUnreachableBrokerFail: consume and produce against a closed
// port say that they cannot connect, naming the address, and exit non-zero
// within --request-timeout, where consume used to print "Processed a total
// of 0 messages" and exit 0 (or wait for ever without --timeout-ms) and
// produce used to fail after --delivery-timeout.
func TestClientsUnreachableBrokerFail(t *testing.T) {
	bs := closedPort(t)
	for _, args := range [][]string{
		{"consume", "--topic", "x", "--timeout-ms", "2000"},
		{"consume", "--topic", "x"},
		{"produce", "--topic", "x"},
		{"topics", "list"},
	} {
		start := time.Now()
		res := runCLI(t, 30*time.Second, "line\n", append(args, "--bootstrap", bs, "--request-timeout", "10s")...)
		if !errors.Is(res.err, errUnreachable) || !strings.Contains(res.err.Error(), "cannot connect to the brokers at "+bs+": ") {
			t.Fatalf("%v against a closed port: err %v, want cannot connect to the brokers at %s", args, res.err, bs)
		}
		if strings.Contains(res.err.Error(), "\n") || strings.Contains(res.stderr, "Processed a total") {
			t.Fatalf("%v: err %q, stderr %q", args, res.err, res.stderr)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Fatalf("%v took %v to fail", args, d)
		}
	}
}

// TestClientsMissingTopicFail: against a dev cluster, consume of a topic
// that does not exist says so and exits non-zero (it used to wait, and
// exit 0 at --timeout-ms), and creates nothing. Produce, whose brokers
// create a topic on first use, still does; against brokers that do not, it
// says the topic does not exist.
func TestClientsMissingTopicFail(t *testing.T) {
	dev := startDev(t, "--dir", t.TempDir(), "--port", "0", "--log-level", "warn")
	bs := dev.bootstrap[0]
	for _, extra := range [][]string{{"--timeout-ms", "2000"}, nil} {
		res := runCLI(t, 30*time.Second, "", append([]string{"consume", "--bootstrap", bs, "--topic", "nosuch"}, extra...)...)
		if !errors.Is(res.err, errTopicMissing) || res.err.Error() != "topic does not exist: nosuch" {
			t.Fatalf("consume of a missing topic %v: err %v", extra, res.err)
		}
	}
	if out := mustRun(t, "", "topics", "list", "--bootstrap", bs).stdout; out != "" {
		t.Fatalf("consume created topics: %q", out)
	}
	mustRun(t, "v\n", "produce", "--bootstrap", bs, "--topic", "created", "--no-audit")
	if out := mustRun(t, "", "topics", "list", "--bootstrap", bs).stdout; out != "created\n" {
		t.Fatalf("topics after produce to a new topic: %q", out)
	}

	strict := brokertest.New(t, brokertest.NoAutoCreate()).Addr()
	start := time.Now()
	res := runCLI(t, 60*time.Second, "v\n", "produce", "--bootstrap", strict, "--topic", "nosuch", "--no-audit")
	if !errors.Is(res.err, errTopicMissing) || !strings.Contains(res.err.Error(), "topic does not exist: nosuch") {
		t.Fatalf("produce to a missing topic without auto-creation: err %v", res.err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("produce took %v to refuse a missing topic", d)
	}

	// soak produce ran until stopped with every record failing.
	stats := filepath.Join(t.TempDir(), "stats.json")
	res = runCLI(t, 60*time.Second, "", "soak", "produce", "--bootstrap", strict, "--registry", "http://127.0.0.1:1",
		"--datacenter", "dc1", "--stats", stats, "--topic", "nosuch")
	if !errors.Is(res.err, errTopicMissing) || !strings.Contains(res.err.Error(), "topic does not exist: nosuch") {
		t.Fatalf("soak produce to a missing topic without auto-creation: err %v", res.err)
	}
	if _, err := os.Stat(stats); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("soak produce refused the topic but wrote %s (%v)", stats, err)
	}
}

func TestConsumeTimeoutOnEmptyTopic(t *testing.T) {
	bs := brokertest.New(t).Addr()
	createTopic(t, bs, "empty", 2)
	start := time.Now()
	res := mustRun(t, "", "consume", "--bootstrap", bs, "--topic", "empty", "--offset", "earliest", "--timeout-ms", "300")
	if res.stdout != "" || !strings.Contains(res.stderr, "Processed a total of 0 messages") {
		t.Fatalf("stdout %q stderr %q", res.stdout, res.stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("a 300 ms idle timeout took %v", d)
	}
}

func TestProduceAutoCreatesTopic(t *testing.T) {
	bs := brokertest.New(t).Addr()
	// --no-audit: the audit topic would be listed too.
	mustRun(t, "first\nsecond\n", "produce", "--bootstrap", bs, "--topic", "auto", "--acks", "1", "--no-audit")
	res := mustRun(t, "", "consume", "--bootstrap", bs, "--topic", "auto", "--offset", "earliest",
		"--max-messages", "2", "--timeout-ms", "10000")
	if res.stdout != "first\nsecond\n" {
		t.Fatalf("consumed %q", res.stdout)
	}
	if out := mustRun(t, "", "topics", "list", "--bootstrap", bs).stdout; out != "auto\n" {
		t.Fatalf("topics after auto-create: %q", out)
	}
}

// TestLoaderRunUnreachableBrokerFails: `loader run` against a closed port
// fails naming the address, with no summary of zeros printed before the
// error (it printed "0 records ... 0 partitions" and then the error).
func TestLoaderRunUnreachableBrokerFails(t *testing.T) {
	bs := closedPort(t)
	props := filepath.Join(t.TempDir(), "loader.properties")
	conf := "name=lj\nbootstrap.servers=" + bs + "\ntopics=pageviews\noutput.uri=file://" + t.TempDir() +
		"\nschema.registry.url=http://" + closedPort(t) + "\n"
	if err := os.WriteFile(props, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runCLI(t, 60*time.Second, "", "loader", "run", "--config", props)
	if !errors.Is(res.err, errUnreachable) || !strings.Contains(res.err.Error(), "loader lj: cannot connect to the brokers at "+bs+": ") {
		t.Fatalf("loader run against a closed port: err %v", res.err)
	}
	if res.stdout != "" {
		t.Fatalf("loader run against a closed port printed %q before its error", res.stdout)
	}
}
