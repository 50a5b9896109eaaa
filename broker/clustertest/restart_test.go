package clustertest

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/internal/testkit/kafkatest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// TestRestartRightAfterSIGKILL is what a supervisor with Restart=always
// does: broker 2 of a ZooKeeper cluster is SIGKILLed and started again at
// once, while its killed session still holds /brokers/ids/2. A broker 2
// with another port is refused at once (the stale registration is not
// its); the real broker 2, same endpoints, waits for the stale session to
// expire, registers and serves its partitions with all their records.
func TestRestartRightAfterSIGKILL(t *testing.T) {
	connect := zktest.Chroot(t, zk(t), "clustertest")
	c := newProcCluster(t, connect, 2)
	ctx := testenv.Context(t, 3*time.Minute)
	addrs := bootstrap(c, 2)
	const topic, parts = "restart", 4
	leaders := leadersOf(kafkatest.CreateTopic(t, addrs, topic, parts, nil))
	cl := newClient(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce(t, ctx, cl, topic, 0, 2_000, parts, nil)
	want := map[int32][]int{}
	expected(want, 0, 2_000, parts, nil)

	const victim = int32(2)
	killed := time.Now()
	c.crash(t, victim)

	// Another broker 2 (other port) meanwhile: a real duplicate of the
	// stale registration, refused without waiting for it.
	props := filepath.Join(t.TempDir(), "dup.properties")
	writeFile(t, props, fmt.Sprintf("broker.id=%d\nlisteners=PLAINTEXT://127.0.0.1:0\nlog.dirs=%s\nzookeeper.connect=%s\n"+
		"zookeeper.session.timeout.ms=%d\n", victim, t.TempDir(), connect, sessionTimeout.Milliseconds()))
	dupStart := time.Now()
	dup := testproc.Launch(t, props)
	err := dup.Wait(t, 30*time.Second)
	dupTook := time.Since(dupStart)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("broker %d on another port: exit %v, want a non-zero exit\n%s", victim, err, dup.Output())
	}
	if out := dup.Output(); !strings.Contains(out, fmt.Sprintf("broker id %d is already registered in ZooKeeper by another broker", victim)) ||
		strings.Contains(out, "waiting for that session to expire") {
		t.Fatalf("broker %d on another port: want an immediate refusal naming the id:\n%s", victim, out)
	}
	// "At once": well before the stale session could have expired, which
	// is what a wait would have lasted.
	if dupTook >= cluster.StaleRegistrationSlack {
		t.Fatalf("the duplicate was refused after %v, want at once", dupTook)
	}

	// The real broker 2: its restart waits out its own stale session.
	c.restart(t, victim)
	restarted := time.Since(killed)
	if out := c.Proc(victim).Output(); !strings.Contains(out, "waiting for that session to expire") {
		t.Errorf("restarted broker did not report waiting for its stale registration:\n%s", out)
	}
	t.Logf("duplicate refused after %v; broker %d listening again %v after SIGKILL (session timeout %v)",
		dupTook.Round(time.Millisecond), victim, restarted.Round(time.Millisecond), sessionTimeout)

	all := bootstrap(c, 2)
	testenv.WaitFor(t, waitTimeout, "leadership back on the restarted broker", func() (bool, string) {
		md := metadata(t, ctx, all[0], topic)
		for p, d := range md.Topics[topic].Partitions {
			if d.Leader != leaders[p] {
				return false, ""
			}
		}
		return true, ""
	})
	cl2 := newClient(t, all, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce(t, ctx, cl2, topic, 2_000, 1_000, parts, nil)
	expected(want, 2_000, 1_000, parts, nil)
	consumeCheck(t, ctx, all, topic, want)
}
