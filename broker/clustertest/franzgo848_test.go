package clustertest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/broker"
)

// franzGo848Tests are franz-go's own integration tests that run its
// KIP-848 consumer (ServerSideBalancer) against a real cluster: the
// chained group ETL (range/848, sticky/848 and sticky/848/static next to
// the classic balancers), the transactional ETL with 848 members
// (TxnOffsetCommit with member epochs), the simple group and a regex the
// broker resolves (internal topics included).
const franzGo848Tests = "TestGroupETL|TestTxnEtl|TestGroupSimple|Test848RegexBrokerResolves"

// TestFranzGoKIP848Suite runs franzGo848Tests of the franz-go release in
// go.mod (go test on the module's pkg/kgo, KGO_SEEDS) against three
// in-process brokers, topics with three replicas.
func TestFranzGoKIP848Suite(t *testing.T) {
	c := newMemClusterWith(t, 3, func(cfg *broker.Config) {
		cfg.Groups.OffsetsTopicPartitions = 4
		cfg.Groups.InitialRebalanceDelay = -1
		cfg.Groups.MinSessionTimeout = time.Second
		cfg.Groups.ConsumerHeartbeatInterval = time.Second
	})
	ctx := testContext(t, 5*time.Minute)
	cmd := exec.CommandContext(ctx, "go", "test", "github.com/twmb/franz-go/pkg/kgo", "-count=1", "-v",
		"-run", franzGo848Tests, "-timeout", "4m")
	cmd.Env = append(os.Environ(), "KGO_SEEDS="+strings.Join(bootstrap(c, 3), ","), "KGO_TEST_RF=3", "KGO_TEST_RECORDS=5000")
	out, err := cmd.CombinedOutput()
	var summary []string
	for _, l := range strings.Split(string(out), "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "--- ") {
			summary = append(summary, t)
		}
	}
	if err != nil {
		t.Fatalf("franz-go's tests failed: %v\n%s", err, lastLines(string(out), 60))
	}
	for _, want := range []string{"--- PASS: TestGroupETL/range/848", "--- PASS: TestGroupETL/sticky/848/static",
		"--- PASS: TestTxnEtl/sticky/848", "--- PASS: TestGroupSimple/848", "--- PASS: Test848RegexBrokerResolves"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("%q not in franz-go's output (skipped?):\n%s", want, strings.Join(summary, "\n"))
		}
	}
	t.Logf("franz-go's tests:\n%s", strings.Join(summary, "\n"))
}
