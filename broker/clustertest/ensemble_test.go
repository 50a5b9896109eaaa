// The ensemble tests of every package are built without -race and run in
// `make test`'s separate ensemble pass, one package at a time, since they
// stop ensemble members (see the Makefile).

//go:build !race

package clustertest

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/kafkatest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// TestEnsembleMemberDown: with the ensemble's leader killed, the cluster
// keeps serving and creating topics. The only test of this package that
// stops ensemble members; it starts the member again before it ends.
func TestEnsembleMemberDown(t *testing.T) {
	members, _ := testenv.ZooKeeperEnsemble(t)
	connect := zktest.Chroot(t, strings.Join(members, ","), "clustertest")
	c := newProcCluster(t, connect, 3)
	ctx := testenv.Context(t, 5*time.Minute)
	addrs := bootstrap(c, 3)
	kafkatest.CreateTopic(t, addrs, "before", 6, nil)
	cl := newClient(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce(t, ctx, cl, "before", 0, 3_000, 6, nil)
	want := map[int32][]int{}
	expected(want, 0, 3_000, 6, nil)

	leader := 0
	for i, m := range members {
		if srvrMode(t, m) == "leader" {
			leader = i + 1
		}
	}
	if leader == 0 {
		t.Fatalf("no ensemble member reports Mode: leader")
	}
	testenv.ControlEnsemble(t, "kill", leader)
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			testenv.ControlEnsemble(t, "start", leader)
		}
	})
	t.Logf("killed ensemble member %d (the leader)", leader)

	produce(t, ctx, cl, "before", 3_000, 3_000, 6, nil)
	expected(want, 3_000, 3_000, 6, nil)
	consumeCheck(t, ctx, addrs, "before", want)
	kafkatest.CreateTopic(t, addrs, "during", 6, nil)
	produce(t, ctx, cl, "during", 0, 600, 6, nil)
	during := map[int32][]int{}
	expected(during, 0, 600, 6, nil)
	consumeCheck(t, ctx, addrs, "during", during)
	if ids := metadata(t, ctx, addrs[0]).Brokers.NodeIDs(); len(ids) != 3 {
		t.Fatalf("brokers %v after the ensemble lost a member, want all 3", ids)
	}

	testenv.ControlEnsemble(t, "start", leader)
	restarted = true
	kafkatest.CreateTopic(t, addrs, "after", 3, nil)
}

// srvrMode asks a ZooKeeper server for its Mode line; "" when it does not
// answer.
func srvrMode(t *testing.T, addr string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return ""
	}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if mode, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return mode
		}
	}
	return ""
}
