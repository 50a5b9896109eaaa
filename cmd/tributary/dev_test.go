package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/testproc"
)

// devRun is `tributary dev` running in the background.
type devRun struct {
	out, errOut *testproc.SyncBuffer
	cancel      context.CancelFunc
	done        chan error
	bootstrap   []string
	registry    string
}

var (
	bootstrapLine = regexp.MustCompile(`(?m)^bootstrap: (\S+)$`)
	registryLine  = regexp.MustCompile(`(?m)^schema registry: (\S+)$`)
)

// startDev runs `tributary dev args...` until stop (or the test's end) and
// waits for its banner.
func startDev(t *testing.T, args ...string) *devRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &devRun{out: &testproc.SyncBuffer{}, errOut: &testproc.SyncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	cmd := newRootCommand()
	cmd.SetArgs(append([]string{"dev"}, args...))
	cmd.SetIn(strings.NewReader(""))
	cmd.SetOut(r.out)
	cmd.SetErr(r.errOut)
	go func() { r.done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	deadline := time.After(60 * time.Second)
	for {
		if m := bootstrapLine.FindStringSubmatch(r.out.String()); m != nil {
			r.bootstrap = strings.Split(m[1], ",")
			if m := registryLine.FindStringSubmatch(r.out.String()); m != nil {
				r.registry = m[1]
			}
			return r
		}
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("tributary dev exited before its banner: %v\n%s", err, r.errOut)
		case <-deadline:
			t.Fatalf("tributary dev printed no banner within 60s:\n%s\n%s", r.out, r.errOut)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop cancels the command (as SIGINT does) and checks a clean exit.
func (r *devRun) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err
		if err != nil {
			t.Errorf("tributary dev: %v\n%s", err, r.errOut)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("tributary dev did not stop within 60s")
	}
}

func TestDevClusterRoundTripAndRestart(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := startDev(t, "--dir", dir, "--brokers", "3", "--port", "0", "--registry", "127.0.0.1:0", "--log-level", "warn")
	if len(r.bootstrap) != 3 {
		t.Fatalf("bootstrap %v, want 3 brokers", r.bootstrap)
	}
	for _, want := range []string{"data in " + dir, "kcat -b " + strings.Join(r.bootstrap, ","), "tributary produce --bootstrap", "tributary consume --bootstrap"} {
		if !strings.Contains(r.out.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, r.out)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(r.bootstrap...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopic(ctx, 6, 1, nil, "dev-topic"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	// CreateTopics answers once the broker it went to knows the leaders;
	// metadata may come from another broker, which learns them a moment
	// later (as in Kafka), so wait for every partition to have one.
	var md kadm.Metadata
	perBroker := map[int32]int{}
	for {
		if md, err = adm.Metadata(ctx, "dev-topic"); err != nil {
			t.Fatal(err)
		}
		clear(perBroker)
		for _, p := range md.Topics["dev-topic"].Partitions {
			perBroker[p.Leader]++
		}
		if len(md.Topics["dev-topic"].Partitions) == 6 && perBroker[-1] == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("leaders per broker %v before %v", perBroker, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if len(md.Brokers) != 3 || perBroker[1] != 2 || perBroker[2] != 2 || perBroker[3] != 2 {
		t.Fatalf("brokers %v, leaders per broker %v; want 3 brokers leading 2 partitions each", md.Brokers.NodeIDs(), perBroker)
	}
	const n = 600
	for i := range n {
		rec := &kgo.Record{Topic: "dev-topic", Partition: int32(i % 6), Value: []byte("v" + strconv.Itoa(i))}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cl.Close()
	checkDevTopic(t, ctx, r.bootstrap, n)

	resp, err := http.Get(r.registry + "/subjects")
	if err != nil {
		t.Fatalf("registry: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "[]" {
		t.Fatalf("registry /subjects: %d %s", resp.StatusCode, body)
	}

	// Restarted on the same directory, the topic and its records are back.
	r.stop(t)
	r2 := startDev(t, "--dir", dir, "--brokers", "3", "--port", "0", "--log-level", "warn")
	checkDevTopic(t, ctx, r2.bootstrap, n)
}

// checkDevTopic reads dev-topic back: partition p holds v<p>, v<p+6>, ...
func checkDevTopic(t *testing.T, ctx context.Context, bootstrap []string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.ConsumeTopics("dev-topic"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	next := map[int32]int{}
	for seen := 0; seen < n; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d: %v", seen, n, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			want := "v" + strconv.Itoa(int(r.Partition)+6*next[r.Partition])
			if string(r.Value) != want || r.Offset != int64(next[r.Partition]) {
				t.Fatalf("partition %d offset %d: %q, want %q at offset %d", r.Partition, r.Offset, r.Value, want, next[r.Partition])
			}
			next[r.Partition]++
			seen++
		})
	}
}

func TestDevRejectsBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--brokers", "0"}, "--brokers 0"},
		{[]string{"--port", "65535", "--brokers", "2"}, "--port 65535"},
		{[]string{"--registry", "nohost"}, "--registry \"nohost\""},
	} {
		res := runCLI(t, 10*time.Second, "", append([]string{"dev", "--dir", t.TempDir()}, c.args...)...)
		if res.err == nil || !strings.Contains(res.err.Error(), c.want) {
			t.Errorf("dev %v: error %v, want one naming %q", c.args, res.err, c.want)
		}
	}
}

// TestDevRestartKeepsKeyedRecords: records produced by key to a 6-partition
// topic on 3 brokers are all back, each in its partition at its offset,
// after a restart on the same directory with 3 brokers and again with 4 (a
// round-robin over 4 would put partitions 3 to 5 on brokers that hold no
// data). Producer ids handed out before a restart are never handed out
// again.
func TestDevRestartKeepsKeyedRecords(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic, n = "keyed", 300
	r := startDev(t, "--dir", dir, "--brokers", "3", "--port", "0", "--log-level", "warn")
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.bootstrap...), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := kadm.NewClient(cl).CreateTopic(ctx, 6, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	type placed struct {
		value     string
		partition int32
		offset    int64
	}
	want := map[string]placed{}
	for i := range n {
		key := "user-" + strconv.Itoa(i%37)
		rec := &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte("event-" + strconv.Itoa(i))}
		res, err := cl.ProduceSync(ctx, rec).First()
		if err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		want[key+"/"+strconv.Itoa(i)] = placed{string(rec.Value), res.Partition, res.Offset}
	}
	perPartition := map[int32]int{}
	for _, p := range want {
		perPartition[p.partition]++
	}
	if len(perPartition) != 6 {
		t.Fatalf("keys landed in partitions %v; want all 6 used", perPartition)
	}
	issued := map[int64]bool{}
	askProducerIDs(t, ctx, cl, issued)
	cl.Close()
	r.stop(t)

	for _, brokers := range []string{"3", "4"} {
		r := startDev(t, "--dir", dir, "--brokers", brokers, "--port", "0", "--log-level", "warn")
		cl, err := kgo.NewClient(kgo.SeedBrokers(r.bootstrap...), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RetryTimeout(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		seenAt := map[string]bool{}
		for got < n {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s brokers: consumed %d of %d: %v", brokers, got, n, ctx.Err())
			}
			fs.EachRecord(func(rec *kgo.Record) {
				i := strings.TrimPrefix(string(rec.Value), "event-")
				id := string(rec.Key) + "/" + i
				w, ok := want[id]
				if !ok || seenAt[id] || w.partition != rec.Partition || w.offset != rec.Offset {
					t.Fatalf("%s brokers: record %s=%s at %d/%d; want it once, at %d/%d (known: %v)",
						brokers, rec.Key, rec.Value, rec.Partition, rec.Offset, w.partition, w.offset, ok)
				}
				seenAt[id] = true
				got++
			})
		}
		askProducerIDs(t, ctx, cl, issued)
		cl.Close()
		r.stop(t)
	}
}

// askProducerIDs asks every broker for a producer id and fails on one that
// is in issued; the new ids are added to it.
func askProducerIDs(t *testing.T, ctx context.Context, cl *kgo.Client, issued map[int64]bool) {
	t.Helper()
	brokers, err := kadm.NewClient(cl).ListBrokers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range brokers {
		req := kmsg.NewPtrInitProducerIDRequest()
		resp, err := req.RequestWith(ctx, cl.Broker(int(b.NodeID)))
		if err != nil {
			t.Fatalf("InitProducerId on broker %d: %v", b.NodeID, err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("InitProducerId on broker %d: error code %d", b.NodeID, resp.ErrorCode)
		}
		if issued[resp.ProducerID] {
			t.Fatalf("broker %d issued producer id %d again (issued before: %v)", b.NodeID, resp.ProducerID, issued)
		}
		issued[resp.ProducerID] = true
	}
}

// TestDevRestartKeepsReplication is issue 39's first hour: `tributary dev
// --brokers 3`, a topic with three replicas and min.insync.replicas=2,
// records produced with acks=all, a stop and the same command again. The
// restarted cluster has the topic's replicas, configs, leaders and full
// ISRs back, takes acks=all records at once, and every record produced on
// either side of the restart reads back by value.
func TestDevRestartKeepsReplication(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic, n = "orders", 300
	args := []string{"--dir", dir, "--brokers", "3", "--port", "0", "--log-level", "warn"}
	r := startDev(t, args...)
	bs := strings.Join(r.bootstrap, ",")
	mustRun(t, "", "topics", "create", "--bootstrap", bs, "--topic", topic, "--partitions", "3",
		"--replication-factor", "3", "--config", "min.insync.replicas=2")
	before := awaitDescribe(t, ctx, bs, topic, fullReplication)
	produceValues(t, ctx, r.bootstrap, topic, 0, n)
	r.stop(t)

	r = startDev(t, args...)
	bs = strings.Join(r.bootstrap, ",")
	// Right after the banner, as a user would.
	produceValues(t, ctx, r.bootstrap, topic, n, 2*n)
	// The leaders are back on the preferred replicas at once, not after
	// leader.imbalance.check.interval.seconds.
	soon, cancelSoon := context.WithTimeout(ctx, 20*time.Second)
	defer cancelSoon()
	after := awaitDescribe(t, soon, bs, topic, fullReplication)
	if sortedISRs(after) != sortedISRs(before) {
		t.Errorf("after the restart, describe printed\n%s\nbefore it\n%s", after, before)
	}
	checkValues(t, ctx, r.bootstrap, topic, 2*n)
}

// fullReplication: three partitions with three replicas each, all in sync,
// min.insync.replicas=2 set.
var fullReplication = regexp.MustCompile(`(?s)^Topic: orders\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: [^\n]*min\.insync\.replicas=2[^\n]*\n` +
	strings.Repeat(`\tTopic: orders\tPartition: \d\tLeader: \d\tReplicas: (\d),\d,\d\tIsr: \d,\d,\d\n`, 3) + `$`)

// awaitDescribe runs `topics describe` until its output matches want, in
// which every leader must be the first replica (the preferred one).
func awaitDescribe(t *testing.T, ctx context.Context, bs, topic string, want *regexp.Regexp) string {
	t.Helper()
	var last string
	for {
		res := runCLI(t, 30*time.Second, "", "topics", "describe", "--bootstrap", bs, "--topic", topic)
		last = res.stdout
		if res.err == nil && want.MatchString(last) && preferredLeaders(last) {
			return last
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topics describe printed\n%s(err %v), want every partition fully replicated and led by its first replica", last, res.err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

var describedISR = regexp.MustCompile(`Isr: [\d,]+`)

// sortedISRs lists each ISR of a describe output in id order (a replica
// that rejoins is written in order, Kafka's controller appends it).
func sortedISRs(describe string) string {
	return describedISR.ReplaceAllStringFunc(describe, func(m string) string {
		ids := strings.Split(strings.TrimPrefix(m, "Isr: "), ",")
		slices.Sort(ids)
		return "Isr: " + strings.Join(ids, ",")
	})
}

var describedPartition = regexp.MustCompile(`Leader: (\d+)\tReplicas: (\d+)`)

func preferredLeaders(describe string) bool {
	for _, m := range describedPartition.FindAllStringSubmatch(describe, -1) {
		if m[1] != m[2] {
			return false
		}
	}
	return true
}

// produceValues produces v<i> for i in [from, to) to partition i%3 with
// acks=all (franz-go's default), each one acknowledged.
func produceValues(t *testing.T, ctx context.Context, bootstrap []string, topic string, from, to int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := from; i < to; i++ {
		rec := &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte("v" + strconv.Itoa(i))}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("produce v%d: %v", i, err)
		}
	}
}

// checkValues reads topic back: partition p holds v<p>, v<p+3>, ... below n.
func checkValues(t *testing.T, ctx context.Context, bootstrap []string, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records: %v", got, n, ctx.Err())
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if want := "v" + strconv.Itoa(int(rec.Offset)*3+int(rec.Partition)); string(rec.Value) != want {
				t.Fatalf("partition %d offset %d: %q, want %q", rec.Partition, rec.Offset, rec.Value, want)
			}
			got++
		})
	}
}
