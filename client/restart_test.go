package client

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestGroupRestartRightAfterSIGKILL: a consumer process is SIGKILLed and
// started again at once with the same consumer id, while its killed
// session still holds /consumers/<group>/ids/<id>. A consumer with that id
// and another subscription is refused at once (ErrConsumerIDInUse); the
// restarted one (same subscription) waits for the stale session to expire,
// registers, takes all the partitions and delivers what follows its last
// commit, with content.
func TestGroupRestartRightAfterSIGKILL(t *testing.T) {
	const topic, partitions, session = "restart", 4, killSession
	ce := newZooKeeper(t, session)
	cluster := newTestCluster(t, ce)
	cluster.CreateTopic(t, topic, partitions)
	offsets := produce(t, cluster.Addrs(), topic, partitions, 400)
	expect := make([][]int, partitions)
	record := func(i int, off int64) {
		p := i % partitions
		for int64(len(expect[p])) <= off {
			expect[p] = append(expect[p], -1)
		}
		expect[p][off] = i
	}
	for i, off := range offsets {
		record(i, off)
	}
	committedAll := func(what string) {
		testenv.WaitFor(t, time.Minute, what, func() (bool, string) {
			var got []int64
			for p := range int32(partitions) {
				off, err := readOffset(testenv.Context(t, 10*time.Second), ce.admin, "g", topic, p)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, off)
				if off != int64(len(expect[p])) {
					return false, fmt.Sprintf("committed %v", got)
				}
			}
			return true, ""
		})
	}

	first := startConsumerChild(t, "member1", ce.zkConnect, "g", topic, session)
	committedAll("the first process to commit everything")
	_, reg, err := ce.admin.Get(testenv.Context(t, 10*time.Second), idPath("g", "member1"))
	if err != nil {
		t.Fatal(err)
	}
	staleSession := reg.EphemeralOwner
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-first.exited

	// Same id, another subscription: someone else's id, refused at once.
	dupStart := time.Now()
	dup, err := NewGroupConsumer(testenv.Context(t, time.Minute), GroupConfig{
		GroupID: "g", ConsumerID: "member1", Brokers: cluster.Addrs(), Coordinator: ce.connect,
		ZooKeeperSessionTimeout: session, Logger: testenv.Logger(t, slog.LevelInfo),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = dup.CreateMessageStreams(testenv.Context(t, time.Minute), topic, 1)
	dupTook := time.Since(dupStart)
	_ = dup.Close(testenv.Context(t, 10*time.Second))
	if !errors.Is(err, ErrConsumerIDInUse) || !strings.Contains(err.Error(), "another subscription") {
		t.Fatalf("consumer member1 with one stream: %v, want ErrConsumerIDInUse for another subscription", err)
	}
	if dupTook >= staleRegistrationSlack {
		t.Fatalf("the other subscription was refused after %v, want at once", dupTook)
	}

	second := startConsumerChild(t, "member1", ce.zkConnect, "g", topic, session)
	testenv.WaitFor(t, session+staleRegistrationSlack+30*time.Second, "the restarted process to register and own every partition", func() (bool, string) {
		ctx := testenv.Context(t, 10*time.Second)
		_, reg, err := ce.admin.Get(ctx, idPath("g", "member1"))
		if err != nil || reg.EphemeralOwner == staleSession {
			return false, fmt.Sprintf("registration owned by 0x%x (%v), the killed session 0x%x", reg.EphemeralOwner, err, staleSession)
		}
		for p := range int32(partitions) {
			data, st, err := ce.admin.Get(ctx, ownerPath("g", topic, p))
			if err != nil || string(data) != "member1" || st.EphemeralOwner != reg.EphemeralOwner {
				return false, fmt.Sprintf("partition %d owned by %q session 0x%x (%v)", p, data, st.EphemeralOwner, err)
			}
		}
		return true, ""
	})
	stderr, _ := os.ReadFile(second.out + ".stderr")
	waited := strings.Contains(string(stderr), "waiting for that session to expire")
	t.Logf("restarted consumer owns every partition %v after SIGKILL (session timeout %v); waited for its stale registration: %v",
		time.Since(killed).Round(time.Millisecond), session, waited)
	if !waited && time.Since(killed) < session {
		t.Errorf("registered before its stale registration could have expired, without waiting for it:\n%s", stderr)
	}

	more := produce(t, cluster.Addrs(), topic, partitions, 400) // indexes 0..399 again: values value-0..value-399
	for i, off := range more {
		record(i, off)
	}
	committedAll("the restarted process to commit the new records")
	second.stop(t)
	delivered := map[[2]int64]bool{}
	for s := range childStreams {
		jumps := readChildOutput(t, fmt.Sprintf("%s.%d", second.out, s), expect, func(p int32, off int64) {
			delivered[[2]int64{int64(p), off}] = true
		})
		for _, j := range jumps { // the only member after the restart
			t.Errorf("%v", j)
		}
	}
	for i, off := range more {
		if p := int64(i % partitions); !delivered[[2]int64{p, off}] {
			t.Errorf("record %d/%d (value-%d) produced after the restart was not delivered", p, off, i)
		}
	}
}
