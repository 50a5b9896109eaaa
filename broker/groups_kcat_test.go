package broker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
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
		// Whole lines only: with -u kcat writes a line in pieces, so a
		// member killed mid-line leaves a fragment without its newline.
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			f := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 3)
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

// awaitStableGroup waits until group is Stable with k members.
func awaitStableGroup(t *testing.T, ctx context.Context, adm *kadm.Client, group string, k int) {
	t.Helper()
	testenv.WaitFor(t, 2*time.Minute, fmt.Sprintf("group %s to be stable with %d members", group, k), func() (bool, string) {
		dg, err := adm.DescribeGroups(ctx, group)
		return err == nil && dg[group].State == "Stable" && len(dg[group].Members) == k, ""
	})
}

// TestKcatGroupSplitsPartitions: two `kcat -G` members of one group split
// a 4-partition topic (librdkafka's own range assignor, run by the leader
// member), read every record exactly once with its content, are described
// as a stable group of two, and commit through OffsetCommit: after they
// leave, the group's offsets are the partitions' ends.
func TestKcatGroupSplitsPartitions(t *testing.T) {
	testenv.Kcat(t)
	b := newTestBroker(t, func(c *config.Config) {
		groupTestConfig(c)
		// Both members usually join the first generation; the records
		// wait for the stable group of two either way.
		c.Groups.InitialRebalanceDelay = 2 * time.Second
	})
	ctx := testenv.Context(t, 3*time.Minute)
	const parts, n = 4, 400
	if err := b.CreateTopic(ctx, "kg", parts); err != nil {
		t.Fatal(err)
	}
	m1 := startKcatMember(t, b.Addr(), "kcat-group", "kg")
	m2 := startKcatMember(t, b.Addr(), "kcat-group", "kg")
	adm := kadm.NewClient(newClient(t, b.Addr()))
	// The records are produced once the group is stable with both
	// members: a member that joins after the first generation (a loaded
	// machine can start the second kcat after the initial rebalance
	// delay) would otherwise find records the first one read but had not
	// committed yet, and read them again, as at-least-once allows.
	awaitStableGroup(t, ctx, adm, "kcat-group", 2)
	produceTestRecords(t, ctx, b.Addr(), "kg", n, parts)
	testenv.WaitFor(t, 90*time.Second, "both kcat members to read every record", func() (bool, string) { return m1.count()+m2.count() >= n, "" })

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
}

// TestKcatGroupMemberKilled: three `kcat -G` members share a 12-partition
// topic; one is killed with SIGKILL mid-run. The coordinator expires its
// session, the other two take its partitions over from the committed
// offsets, and every record is read with its content: each member reads
// contiguous runs of offsets, and a record is read twice only where a
// partition changed hands after its last commit. 30,000 records by
// default, the 300,000 with TRIBUTARY_FULL=1.
func TestKcatGroupMemberKilled(t *testing.T) {
	testenv.Kcat(t)
	n := 30_000
	if os.Getenv("TRIBUTARY_FULL") == "1" {
		n = 300_000
	}
	const parts = 12
	const session = 6 * time.Second
	b := newTestBroker(t, func(c *config.Config) {
		groupTestConfig(c)
		c.Groups.InitialRebalanceDelay = 2 * time.Second
	})
	ctx := testenv.Context(t, 5*time.Minute)
	if err := b.CreateTopic(ctx, "kk", parts); err != nil {
		t.Fatal(err)
	}
	produce := func(from, to int) {
		cl := newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, testRecord("kk", i, parts))
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	members := []*kcatMember{
		startKcatMember(t, b.Addr(), "kill-group", "kk"),
		startKcatMember(t, b.Addr(), "kill-group", "kk"),
		startKcatMember(t, b.Addr(), "kill-group", "kk"),
	}
	adm := kadm.NewClient(newClient(t, b.Addr()))
	stableWith := func(k int) bool {
		dg, err := adm.DescribeGroups(ctx, "kill-group")
		return err == nil && dg["kill-group"].State == "Stable" && len(dg["kill-group"].Members) == k
	}
	// distinct counts the records read by anyone.
	distinct := func() (map[int32]map[int]int, int) {
		read := map[int32]map[int]int{}
		count := 0
		for _, m := range members {
			m.mu.Lock()
			for p, lines := range m.seen {
				if read[p] == nil {
					read[p] = map[int]int{}
				}
				for _, l := range lines {
					off, _ := strconv.Atoi(strings.SplitN(l, " ", 2)[0])
					if read[p][off] == 0 {
						count++
					}
					read[p][off]++
				}
			}
			m.mu.Unlock()
		}
		return read, count
	}
	committed := func() map[int32]int64 {
		offs, err := adm.FetchOffsets(ctx, "kill-group")
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]int64{}
		for p := range int32(parts) {
			if o, ok := offs.Lookup("kk", p); ok {
				out[p] = o.At
			}
		}
		return out
	}
	// The first half is produced once all three are in the group: a
	// member joining late would move partitions whose records were read
	// but not committed yet (read twice, before atKill), or give a member
	// back a partition it lost (a jump in its offsets).
	awaitStableGroup(t, ctx, adm, "kill-group", 3)
	produce(0, n/2)
	testenv.WaitFor(t, 2*time.Minute, "the first half read and committed", func() (bool, string) {
		_, c := distinct()
		var sum int64
		for _, o := range committed() {
			sum += o
		}
		return c == n/2 && sum == int64(n/2), ""
	})

	// The second half in chunks, each produced once the previous one is
	// read; the third member is killed right after the third chunk is
	// produced, while the group reads it.
	const chunks = 8
	chunk := (n - n/2) / chunks
	victim := members[2]
	var killed time.Time
	var atKill map[int32]int64
	for k := range chunks {
		from, to := n/2+k*chunk, n/2+(k+1)*chunk
		if k == chunks-1 {
			to = n
		}
		produce(from, to)
		if k == 2 {
			_ = victim.cmd.Process.Kill()
			<-victim.done
			killed = time.Now()
			// The victim can commit no more: what is committed now is
			// where its partitions resume.
			atKill = committed()
			testenv.WaitFor(t, 2*session+30*time.Second, "the two survivors to be a stable group", func() (bool, string) { return stableWith(2), "" })
			rebalance := time.Since(killed)
			t.Logf("group stable with 2 members %v after SIGKILL (session timeout %v)", rebalance, session)
			if rebalance > session+10*time.Second {
				t.Errorf("rebalance took %v, more than the session timeout %v plus 10 s", rebalance, session)
			}
		}
		testenv.WaitFor(t, 2*time.Minute, fmt.Sprintf("chunk %d read", k), func() (bool, string) {
			_, c := distinct()
			return c == to, ""
		})
	}
	want := func(p int32, off int) string {
		return fmt.Sprintf("%d %s", off, testRecord("kk", off*parts+int(p), parts).Value)
	}
	for _, m := range members {
		m.mu.Lock()
		for p, lines := range m.seen {
			prev := -1
			for _, l := range lines {
				off, _ := strconv.Atoi(strings.SplitN(l, " ", 2)[0])
				if off >= n/parts || l != want(p, off) {
					t.Fatalf("partition %d: read %.40q, want %.40q", p, l, want(p, off))
				}
				// A member reads runs of consecutive offsets; a new run
				// (it got the partition again) never skips ahead.
				if prev >= 0 && off > prev+1 {
					t.Fatalf("partition %d: a member jumped from offset %d to %d", p, prev, off)
				}
				prev = off
			}
		}
		m.mu.Unlock()
	}
	read, _ := distinct()
	dups := 0
	for p, offs := range read {
		if len(offs) != n/parts {
			t.Fatalf("partition %d: %d offsets read, want %d", p, len(offs), n/parts)
		}
		for off, c := range offs {
			if c > 1 && int64(off) < atKill[p] {
				t.Fatalf("partition %d offset %d read %d times, before the offset %d committed when the member was killed",
					p, off, c, atKill[p])
			}
			dups += c - 1
		}
	}
	t.Logf("%d records read, %d of them twice (after the last commit of a partition that changed hands)", n+dups, dups)
}
