package broker

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// runKcat runs kcat with a bounded time and returns its stdout.
func runKcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	kcat := testenv.Kcat(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %v: %v\nstderr: %s", args, err, errb.String())
	}
	return out.String()
}

func TestKcatAgainstBrokerProcess(t *testing.T) {
	testenv.Kcat(t) // fail early, with the install hint, if kcat is missing
	dir := t.TempDir()
	p := testproc.StartBroker(t, writeProperties(t, map[string]string{
		"broker.id": "7", "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir,
		"num.partitions": "3", "auto.create.topics.enable": "true",
	}))
	addr := p.Addr

	// Produce with kcat: keyed lines to partition 1, then more with each
	// compression codec, and with librdkafka's idempotent producer.
	var lines []string
	for i := range 50 {
		lines = append(lines, fmt.Sprintf("key%d:value %d", i, i))
	}
	runKcat(t, strings.Join(lines, "\n")+"\n", "-b", addr, "-P", "-t", "kc", "-p", "1", "-K", ":")
	want := append([]string(nil), lines...)
	for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
		var batch []string
		for i := range 20 {
			batch = append(batch, fmt.Sprintf("%s%d:%s value %d", codec, i, codec, i))
		}
		runKcat(t, strings.Join(batch, "\n")+"\n", "-b", addr, "-P", "-t", "kc", "-p", "1", "-K", ":", "-z", codec)
		want = append(want, batch...)
	}
	runKcat(t, "idem:potent\n", "-b", addr, "-P", "-t", "kc", "-p", "1", "-K", ":", "-X", "enable.idempotence=true")
	want = append(want, "idem:potent")

	// Metadata as kcat shows it.
	md := runKcat(t, "", "-b", addr, "-L")
	for _, re := range []string{
		`(?m)^ 1 brokers:$`,
		`(?m)^  broker 7 at 127\.0\.0\.1:\d+`,
		`(?m)^  topic "kc" with 3 partitions:$`,
		`(?m)^    partition 1, leader 7, replicas: 7, isrs: 7$`,
	} {
		if !regexp.MustCompile(re).MatchString(md) {
			t.Fatalf("kcat -L output lacks %s:\n%s", re, md)
		}
	}

	// Consume with kcat: every line back, in order, with its offset.
	out := runKcat(t, "", "-b", addr, "-C", "-t", "kc", "-p", "1", "-o", "beginning", "-e", "-f", "%o %k:%s\n")
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("kcat consumed %d records, want %d:\n%s", len(got), len(want), out)
	}
	for i := range want {
		if got[i] != fmt.Sprintf("%d %s", i, want[i]) {
			t.Fatalf("record %d: kcat read %q, want %q", i, got[i], fmt.Sprintf("%d %s", i, want[i]))
		}
	}

	// kgo reads what kcat wrote; kcat reads what kgo wrote (headers, timestamps).
	ctx := testenv.Context(t, 30*time.Second)
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kc": {1: kgo.NewOffset().AtStart()}}))
	var n int
	for n < len(want) {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if s := string(r.Key) + ":" + string(r.Value); s != want[n] {
				t.Fatalf("kgo read %q at %d, want %q", s, n, want[n])
			}
			n++
		})
	}
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ts := time.UnixMilli(1_650_000_000_123)
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "kc", Partition: 2, Key: []byte("hk"), Value: []byte("hv"),
		Timestamp: ts, Headers: []kgo.RecordHeader{{Key: "h1", Value: []byte("x1")}}}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out = runKcat(t, "", "-b", addr, "-C", "-t", "kc", "-p", "2", "-o", "beginning", "-e", "-f", "%k|%s|%T|%h\n")
	if out != "hk|hv|1650000000123|h1=x1\n" {
		t.Fatalf("kcat read %q", out)
	}
	// Offset by timestamp: -o s@<ms> seeks with ListOffsets.
	out = runKcat(t, "", "-b", addr, "-C", "-t", "kc", "-p", "2", "-o", "s@1650000000000", "-e", "-f", "%s\n")
	if out != "hv\n" {
		t.Fatalf("kcat from timestamp read %q", out)
	}
	if err := p.Stop(t, 15); err != nil {
		t.Fatalf("broker exit after SIGTERM: %v\n%s", err, p.Output())
	}
}
