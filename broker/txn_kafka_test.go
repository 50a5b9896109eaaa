package broker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/group"
	"github.com/tributary/tributary/broker/txn"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// runTool runs a Kafka tool's main and returns its stdout, failing t on a
// non-zero exit.
func runTool(t *testing.T, ctx context.Context, tools testenv.KafkaTools, class string, args ...string) string {
	t.Helper()
	cmd := tools.Command(ctx, class, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", class, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestKafkaTransactionsTools: Kafka 3.9's kafka-transactions lists and
// describes our transactions, finds a hanging one (a transactional batch
// produced without AddPartitionsToTxn, which the coordinator never heard
// of) and aborts it, after which read_committed consumers read past it;
// Kafka 2.8's DumpLogSegments --transaction-log-decoder reads our
// __transaction_state segment.
func TestKafkaTransactionsTools(t *testing.T) {
	tools39, tools28 := testenv.Kafka39Tools(t), testenv.Kafka28Tools(t)
	// The hanging transaction below is what KIP-890's verification
	// refuses (TestTxnVerification): off here, as on a Kafka < 3.6 broker,
	// to make one for the tools to find.
	b := newTestBroker(t, func(c *config.Config) { c.DisableTxnVerification = true })
	ctx := testenv.Context(t, 4*time.Minute)
	admin := newClient(t, b.Addr())
	createTopic(t, ctx, admin, "kt", 1)
	txns := func(args ...string) string {
		t.Helper()
		return runTool(t, ctx, tools39, "org.apache.kafka.tools.TransactionsCommand", append([]string{"--bootstrap-server", b.Addr()}, args...)...)
	}

	cl := newClient(t, b.Addr(), kgo.TransactionalID("kt-1"), kgo.TransactionTimeout(30*time.Second))
	txnProduce(t, ctx, cl, "kt", "one", 2, true)
	// Open and left open: describe sees it Ongoing on kt-0.
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "kt", Partition: 0, Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out := txns("describe", "--transactional-id", "kt-1")
	if !strings.Contains(out, "Ongoing") || !strings.Contains(out, "kt-0") {
		t.Fatalf("kafka-transactions describe:\n%s", out)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	// A hanging transaction: a producer of kt-hang writes a transactional
	// batch to kt-0 without adding the partition to a transaction.
	c := dialRaw(t, b.Addr())
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(1)
	fc.CoordinatorType, fc.CoordinatorKey = 1, "kt-hang"
	if resp := c.roundTrip(fc).(*kmsg.FindCoordinatorResponse); resp.ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %+v", resp)
	}
	x := rawTxn{t, c, "kt-hang"}
	init := x.init(4, 60000, -1, -1)
	if init.ErrorCode != 0 {
		t.Fatalf("init: %+v", init)
	}
	batch := encodeOffsetsBatch([]group.Record{{Key: []byte("h"), Value: []byte("hanging")}}, time.Now().UnixMilli(),
		&txnProducer{init.ProducerID, init.ProducerEpoch, 0})
	preq := kmsg.NewPtrProduceRequest()
	preq.SetVersion(8)
	preq.TransactionID, preq.Acks, preq.TimeoutMillis = kmsg.StringPtr("kt-hang"), -1, 10000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "kt"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = batch
	pt.Partitions = append(pt.Partitions, pp)
	preq.Topics = append(preq.Topics, pt)
	presp := c.roundTrip(preq).(*kmsg.ProduceResponse)
	if code := presp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("producing the hanging batch: error %d", code)
	}
	hangAt := presp.Topics[0].Partitions[0].BaseOffset

	out = txns("list")
	for _, want := range []string{"kt-1", "CompleteCommit", "kt-hang", "Empty"} {
		if !strings.Contains(out, want) {
			t.Fatalf("kafka-transactions list lacks %q:\n%s", want, out)
		}
	}
	out = txns("find-hanging", "--broker-id", strconv.Itoa(int(b.cfg.BrokerID)), "--max-transaction-timeout", "0")
	if !strings.Contains(out, strconv.FormatInt(init.ProducerID, 10)) || !strings.Contains(out, strconv.FormatInt(hangAt, 10)) {
		t.Fatalf("find-hanging does not show producer %d at offset %d:\n%s", init.ProducerID, hangAt, out)
	}
	txns("abort", "--topic", "kt", "--partition", "0", "--start-offset", strconv.FormatInt(hangAt, 10))
	out = txns("find-hanging", "--broker-id", strconv.Itoa(int(b.cfg.BrokerID)), "--max-transaction-timeout", "0")
	if strings.Contains(out, strconv.FormatInt(init.ProducerID, 10)) {
		t.Fatalf("still hanging after abort:\n%s", out)
	}
	plain := newClient(t, b.Addr())
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "kt", Partition: 0, Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := readValues(t, ctx, b.Addr(), "kt", 4, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if fmt.Sprint(got[0]) != "[one-0 one-1 open after]" {
		t.Fatalf("read_committed after the abort: %v", got[0])
	}

	// DumpLogSegments (2.8) decodes kt-1's state records.
	seg := filepath.Join(b.cfg.LogDirs[0], fmt.Sprintf("%s-%d", txn.StateTopic, txn.PartitionFor("kt-1", txn.DefaultStatePartitions)), "00000000000000000000.log")
	if _, err := os.Stat(seg); err != nil {
		t.Fatal(err)
	}
	out = runTool(t, ctx, tools28, "kafka.tools.DumpLogSegments", "--files", seg, "--transaction-log-decoder", "--print-data-log")
	for _, want := range []string{"transactionalId=kt-1", "state=Empty", "state=Ongoing", "state=PrepareCommit", "state=CompleteCommit", "kt-0", "txnTimeoutMs=30000"} {
		if !strings.Contains(out, want) {
			t.Fatalf("DumpLogSegments --transaction-log-decoder lacks %q:\n%s", want, out)
		}
	}
}
