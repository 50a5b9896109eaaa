package broker

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestTxnJavaClient: Kafka 3.9's Java producer (kafka-clients, compiled
// against at test time) runs six transactions, committing the even ones
// and aborting the odd ones, each with sendOffsetsToTransaction; a second
// producer with the same transactional.id fences the first. A Java
// read_committed consumer sees only the committed records, in order; a
// read_uncommitted one sees all; the group's offset is the last committed
// transaction's.
func TestTxnJavaClient(t *testing.T) {
	tools := testenv.Kafka39Tools(t)
	b := newTestBroker(t, nil)
	ctx := testenv.Context(t, 4*time.Minute)
	admin := newClient(t, b.Addr())
	createTopic(t, ctx, admin, "jt-out", 1)
	createTopic(t, ctx, admin, "jt-in", 1)

	classes := t.TempDir()
	javac := filepath.Join(filepath.Dir(tools.Java), "javac")
	src := filepath.Join(testenv.RepoRoot(t), "broker", "testdata", "java", "TxnClient.java")
	if out, err := exec.CommandContext(ctx, javac, "-cp", filepath.Join(tools.Lib, "*"), "-d", classes, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	java := func(args ...string) []string {
		t.Helper()
		argv := append([]string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dlog4j.configuration=file:" + tools.Log4j,
			"-cp", classes + string(filepath.ListSeparator) + filepath.Join(tools.Lib, "*"), "TxnClient"}, args...)
		cmd := exec.CommandContext(ctx, tools.Java, argv...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("TxnClient %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return strings.Fields(string(out))
	}
	out := java("produce", b.Addr(), "jt-out", "java-txn", "java-group", "jt-in")
	if len(out) != 2 || out[0] != "FENCED" || (out[1] != "ProducerFencedException" && out[1] != "InvalidProducerEpochException") {
		t.Fatalf("the zombie producer: %v", out)
	}
	var committed, all []string
	for i := range 6 {
		for j := range 10 {
			v := fmt.Sprintf("t%d-%d", i, j)
			all = append(all, v)
			if i%2 == 0 {
				committed = append(committed, v)
			}
		}
	}
	committed = append(committed, "b-0")
	all = append(all, "b-0")
	if got := java("consume", b.Addr(), "jt-out", "read_committed", fmt.Sprint(len(committed))); strings.Join(got, ",") != strings.Join(committed, ",") {
		t.Fatalf("read_committed:\n got %v\nwant %v", got, committed)
	}
	if got := java("consume", b.Addr(), "jt-out", "read_uncommitted", fmt.Sprint(len(all))); strings.Join(got, ",") != strings.Join(all, ",") {
		t.Fatalf("read_uncommitted:\n got %v\nwant %v", got, all)
	}
	testenv.WaitFor(t, 30*time.Second, "java-group's offset from the last committed transaction", func() (bool, string) {
		offs, err := kadm.NewClient(admin).FetchOffsets(ctx, "java-group")
		if err != nil {
			return false, err.Error()
		}
		o, ok := offs.Lookup("jt-in", 0)
		return ok && o.Err == nil && o.At == 50, fmt.Sprintf("%+v", o)
	})
}
