package broker

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// procFDs counts the open descriptors of process pid.
func procFDs(t testing.TB, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// setNoFileLimit sets another process's soft RLIMIT_NOFILE (prlimit(2)),
// as `prlimit --pid` does, keeping its hard limit.
func setNoFileLimit(t testing.TB, pid int, soft uint64) {
	t.Helper()
	var old syscall.Rlimit
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_NOFILE, 0,
		uintptr(unsafe.Pointer(&old)), 0, 0); e != 0 {
		t.Fatalf("prlimit get: %v", e)
	}
	lim := syscall.Rlimit{Cur: soft, Max: old.Max}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_NOFILE,
		uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
		t.Fatalf("prlimit set: %v", e)
	}
}

// TestOutOfDescriptorsDegradesAndRecovers runs a broker process, lowers its
// descriptor limit to just above what it holds, and creates topics until a
// creation fails: the failure reaches the client at once with the cause
// (KAFKA_STORAGE_ERROR naming the descriptors), the partitions created
// before keep serving produce and fetch, a new client still connects (the
// accept reserve), and once topics are deleted creation works again — all
// without a restart.
func TestOutOfDescriptorsDegradesAndRecovers(t *testing.T) {
	t.Parallel() // a broker process of its own, mostly waited on: beside the other slow broker tests
	p := testproc.StartBroker(t, writeProperties(t, map[string]string{
		"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(),
	}))
	ctx := testenv.Context(t, 3*time.Minute)
	early := []string{"early-0", "early-1", "early-2"}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ConsumeTopics(early...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ProducerLinger(0),
		kgo.RecordRetries(3), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, early...); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	produceAndFetch := func(round string) {
		t.Helper()
		for _, topic := range early {
			v := topic + "/" + round
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce to %s (%s): %v", topic, round, err)
			}
			want[topic] = append(want[topic], v)
		}
		got := map[string][]string{}
		for n := 0; n < len(early); {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("fetch (%s): %v; got %v", round, err, got)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				got[r.Topic] = append(got[r.Topic], string(r.Value))
				n++
			})
		}
		for _, topic := range early {
			if w := want[topic][len(want[topic])-1]; len(got[topic]) != 1 || got[topic][0] != w {
				t.Fatalf("fetch from %s (%s): %q, want [%q]", topic, round, got[topic], w)
			}
		}
	}
	produceAndFetch("before")

	// Out of descriptors: the limit just above what the broker holds.
	held := procFDs(t, p.Pid())
	setNoFileLimit(t, p.Pid(), uint64(held+8))
	var failure string
	var created []string
	// Where the limit bites depends on how many descriptors the broker
	// holds at that moment (idle segment files are closed, checkpoints come
	// and go): around 200 topics in most runs, so the bound is generous.
	const maxTopics = 1000
	for i := 0; i < maxTopics && failure == ""; i++ {
		name := fmt.Sprintf("flood-%d", i)
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := adm.CreateTopic(cctx, 1, 1, nil, name)
		cancel()
		switch {
		case err == nil:
			created = append(created, name)
		case res.Err != nil && strings.Contains(res.ErrMessage, "descriptors"):
			if res.Err != kerr.KafkaStorageError {
				t.Fatalf("creation failed with %v (%s), want KAFKA_STORAGE_ERROR", res.Err, res.ErrMessage)
			}
			failure = res.ErrMessage
			created = append(created, name) // the topic exists, offline here
		default:
			t.Fatalf("creating %s: %v (%s)", name, err, res.ErrMessage)
		}
	}
	if failure == "" {
		t.Fatalf("%d topics created under a limit of %d descriptors", maxTopics, held+8)
	}
	t.Logf("after %d topics: %s", len(created), failure)

	// A new client connects (the accept reserve), and a produce to the
	// partition that could not open says why. This comes first: the
	// broker retries the open after a second, and the retry may succeed
	// (the descriptors it holds come and go), bringing the partition online.
	raw := dialRaw(t, p.Addr)
	apiVersionsOK(t, raw)
	failed := created[len(created)-1]
	pr := raw.roundTrip(produceRequest(9, -1, failed, 0, makeBatch(1, -1, -1, -1, "x"))).(*kmsg.ProduceResponse)
	sp := pr.Topics[0].Partitions[0]
	switch {
	case sp.ErrorCode == kerr.KafkaStorageError.Code && sp.ErrorMessage != nil && strings.Contains(*sp.ErrorMessage, "descriptors"):
	case sp.ErrorCode == 0:
		// Online by a retry since: the produce took.
		t.Logf("produce to %s: the partition came online by a retry before the produce", failed)
	default:
		msg := "no message"
		if sp.ErrorMessage != nil {
			msg = *sp.ErrorMessage
		}
		t.Fatalf("produce to %s: %v (%s); want KAFKA_STORAGE_ERROR naming the descriptors", failed, kerr.ErrorForCode(sp.ErrorCode), msg)
	}
	raw.conn.Close()
	produceAndFetch("out of descriptors")

	// Delete what the flood created; creation works again.
	if _, err := adm.DeleteTopics(ctx, created...); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := adm.CreateTopic(ctx, 1, 1, nil, "after")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("creation after deleting topics: %v (%s)", err, res.ErrMessage)
		}
		if res.Err == kerr.KafkaStorageError {
			// The topic exists and comes online by itself once the
			// reconciler's back-off ends.
			if _, err := adm.DeleteTopics(ctx, "after"); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "after", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce to a topic created after recovery: %v", err)
	}
	produceAndFetch("after")
	if !p.Running() {
		t.Fatal("broker exited")
	}
	if n := strings.Count(p.Output(), "opening a led partition failed"); n > 10 {
		t.Fatalf("%d open-failure lines: not rate limited", n)
	}
}

// TestBrokerPartitionsUnderDescriptorLimit runs a broker process whose
// RLIMIT_NOFILE is n from its start and has it serve n partitions (topics of
// 100 partitions), each taking a produce and returning the record on fetch:
// partitions do not hold descriptors. n is 300 here (partition creation is
// the slow part); TRIBUTARY_FULL=1 runs 20,000 partitions under a limit of
// 20,000.
func TestBrokerPartitionsUnderDescriptorLimit(t *testing.T) {
	n := 300
	if os.Getenv("TRIBUTARY_FULL") != "" {
		n = 20000
	}
	p := testproc.StartBrokerWithNoFile(t, n, writeProperties(t, map[string]string{
		"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(),
	}))
	ctx := testenv.Context(t, time.Duration(n/10)*time.Second+5*time.Minute) // creation dominates
	var topics []string
	for i := range n / 100 {
		topics = append(topics, fmt.Sprintf("many-%d", i))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RetryTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(300_000)
	for _, topic := range topics {
		res, err := adm.CreateTopic(ctx, 100, 1, nil, topic)
		if err != nil {
			t.Fatalf("creating %s: %v (%s)", topic, err, res.ErrMessage)
		}
	}
	var recs []*kgo.Record
	for _, topic := range topics {
		for part := range int32(100) {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Value: []byte(fmt.Sprintf("%s/%d", topic, part))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing to %d partitions: %v", n, err)
	}
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("fetched %d of %d partitions: %v", len(seen), n, ctx.Err())
		}
		fs.EachError(func(topic string, part int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, part, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("%s/%d", r.Topic, r.Partition); string(r.Value) != want || r.Offset != 0 {
				t.Fatalf("%s-%d offset %d: %q, want %q at 0", r.Topic, r.Partition, r.Offset, r.Value, want)
			}
			seen[string(r.Value)] = true
		})
	}
	t.Logf("%d partitions served by one broker under RLIMIT_NOFILE %d: %d descriptors open, RSS %s",
		n, n, procFDs(t, p.Pid()), procStatus(t, p.Pid(), "VmRSS"))
}
