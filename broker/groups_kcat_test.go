package broker

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary/tributary/internal/testenv"
)

// kcatMember is a `kcat -G` balanced consumer printing "partition offset
// value" lines.
type kcatMember struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	seen map[int32][]string // partition -> "offset value", in order
	n    int
	done chan struct{}
}

func startKcatMember(t *testing.T, addr, group, topic string) *kcatMember {
	t.Helper()
	kcat := testenv.Kcat(t)
	cmd := exec.Command(kcat, "-b", addr, "-u", "-G", group, "-f", "%p %o %s\n",
		"-X", "auto.offset.reset=earliest", "-X", "session.timeout.ms=6000", "-X", "auto.commit.interval.ms=200", topic)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &kcatMember{cmd: cmd, seen: map[int32][]string{}, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.SplitN(sc.Text(), " ", 3)
			if len(f) != 3 {
				continue
			}
			p, _ := strconv.Atoi(f[0])
			m.mu.Lock()
			m.seen[int32(p)] = append(m.seen[int32(p)], f[1]+" "+f[2])
			m.n++
			m.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-m.done
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("kcat stderr:\n%s", stderr.String())
		}
	})
	return m
}

func (m *kcatMember) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

// stop ends kcat with SIGTERM, so that it commits and leaves the group.
func (m *kcatMember) stop(t *testing.T) {
	t.Helper()
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		t.Fatal("kcat did not exit after SIGTERM")
	}
}

// waitFor polls cond every 50 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestKcatGroupSplitsPartitions: two `kcat -G` members of one group split
// a 4-partition topic (librdkafka's own range assignor, run by the leader
// member), read every record exactly once with its content, are described
// as a stable group of two, and commit through OffsetCommit: after they
// leave, the group's offsets are the partitions' ends.
func TestKcatGroupSplitsPartitions(t *testing.T) {
	testenv.Kcat(t)
	b := newTestBroker(t, func(c *Config) {
		groupTestConfig(c)
		// Both members join the first generation.
		c.Groups.InitialRebalanceDelay = 2 * time.Second
	})
	ctx := testContext(t, 3*time.Minute)
	const parts, n = 4, 400
	if err := b.CreateTopic(ctx, "kg", parts); err != nil {
		t.Fatal(err)
	}
	produceTestRecords(t, ctx, b.Addr(), "kg", n, parts)

	m1 := startKcatMember(t, b.Addr(), "kcat-group", "kg")
	m2 := startKcatMember(t, b.Addr(), "kcat-group", "kg")
	waitFor(t, 90*time.Second, "both kcat members to read every record", func() bool { return m1.count()+m2.count() >= n })

	adm := kadm.NewClient(newClient(t, b.Addr()))
	dg, err := adm.DescribeGroups(ctx, "kcat-group")
	if err != nil {
		t.Fatal(err)
	}
	g := dg["kcat-group"]
	if g.Err != nil || g.State != "Stable" || g.ProtocolType != "consumer" || len(g.Members) != 2 {
		t.Fatalf("group described as %+v", g)
	}
	assigned := map[int32]string{}
	for _, mem := range g.Members {
		ca, ok := mem.Assigned.AsConsumer()
		if !ok || mem.ClientID != "rdkafka" || mem.ClientHost != "/127.0.0.1" {
			t.Fatalf("member %+v", mem)
		}
		for _, at := range ca.Topics {
			for _, p := range at.Partitions {
				if prev, dup := assigned[p]; dup {
					t.Fatalf("partition %d assigned to %s and %s", p, prev, mem.MemberID)
				}
				assigned[p] = mem.MemberID
			}
		}
	}
	if len(assigned) != parts {
		t.Fatalf("assignment %v covers %d partitions, want %d", assigned, len(assigned), parts)
	}

	// Every record once, in offset order per partition, each partition
	// read by one member only.
	for p := range int32(parts) {
		var lines []string
		readers := 0
		for _, m := range []*kcatMember{m1, m2} {
			m.mu.Lock()
			if got := m.seen[p]; len(got) > 0 {
				readers++
				lines = slices.Clone(got)
			}
			m.mu.Unlock()
		}
		if readers != 1 {
			t.Fatalf("partition %d read by %d members", p, readers)
		}
		var want []string
		for i, off := 0, 0; i < n; i++ {
			if int32(i%parts) == p {
				want = append(want, fmt.Sprintf("%d %s", off, testRecord("kg", i, parts).Value))
				off++
			}
		}
		if !slices.Equal(lines, want) {
			t.Fatalf("partition %d: kcat read %d lines, want %d; first %q", p, len(lines), len(want), lines[:min(3, len(lines))])
		}
	}

	m1.stop(t)
	m2.stop(t)
	offs, err := adm.FetchOffsets(ctx, "kcat-group")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		if o, ok := offs.Lookup("kg", p); !ok || o.At != int64(n/parts) {
			t.Fatalf("committed offset of kg-%d: %+v, want %d", p, o, n/parts)
		}
	}
	dg, err = adm.DescribeGroups(ctx, "kcat-group")
	if err != nil || dg["kcat-group"].State != "Empty" {
		t.Fatalf("after both left: %+v, %v", dg["kcat-group"], err)
	}
	_ = context.Background
}
