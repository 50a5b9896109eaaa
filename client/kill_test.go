package client

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// killSession is zookeeper.session.timeout.ms of the kill test's members:
// how long the killed one keeps its partitions.
const killSession = 3 * time.Second

// TestGroupSurvivesKilledConsumer is the kill scenario (see
// killedConsumer) with 100,000 records on the standalone test ZooKeeper;
// `make test` runs it under -race. The million (TRIBUTARY_FULL=1) runs in
// TestEnsembleGroupSurvivesKilledConsumer, without -race.
func TestGroupSurvivesKilledConsumer(t *testing.T) {
	killedConsumer(t, newZooKeeper(t, killSession), 100_000)
}

// killedConsumer: a 12-partition topic on a 3-broker cluster registered in
// ce, 4 member processes of group "g1" (3 streams each) and n records. One
// member is SIGKILLed a quarter of the way through. Its partitions must
// move to the others within the session timeout (plus one rebalance);
// every record is delivered with the content it was written with;
// duplicates are only on the dead member's partitions, at or after its last
// committed offset, seen once by it and once by a survivor. Per-partition
// order holds (no gap, no reordering within a fetch run). A second group
// "g2" (in-process, 2 members) consumes the same topic at the same time and
// receives everything exactly once, in offset order per partition.
func killedConsumer(t *testing.T, ce *coordEnv, n int) {
	const partitions, topic = 12, "killtest"
	const session = killSession
	cluster := newTestCluster(t, ce)
	leaders := cluster.CreateTopic(t, topic, partitions)
	perBroker := map[int32]int{}
	for _, l := range leaders {
		perBroker[l]++
	}
	if len(perBroker) != clusterSize {
		t.Fatalf("leaders %v: want partitions on every one of the %d brokers", leaders, clusterSize)
	}

	start := time.Now()
	offsets := produce(t, cluster.Addrs(), topic, partitions, n)
	t.Logf("produced %d records in %v", n, time.Since(start).Round(time.Millisecond))
	// expect[p][offset] = record index.
	expect := make([][]int, partitions)
	for i, off := range offsets {
		p := i % partitions
		for int64(len(expect[p])) <= off {
			expect[p] = append(expect[p], -1)
		}
		expect[p][off] = i
	}

	// Group g2, in-process, alongside.
	g2Counts := make([][]int32, partitions)
	for p := range g2Counts {
		g2Counts[p] = make([]int32, len(expect[p]))
	}
	var g2mu sync.Mutex
	var g2Bad, g2Disorder []string
	g2Next := make([]int64, partitions) // per partition, the offset g2 must be handed next
	g2ctx, g2cancel := context.WithCancel(context.Background())
	defer g2cancel()
	var g2wg sync.WaitGroup
	var g2members []*GroupConsumer
	for i := range 2 {
		g, err := NewGroupConsumer(testenv.Context(t, time.Minute), GroupConfig{
			GroupID: "g2", ConsumerID: fmt.Sprintf("g2-member%d", i), Brokers: cluster.Addrs(),
			Coordinator: ce.connect, AutoOffsetReset: "earliest", AutoCommitInterval: 200 * time.Millisecond,
			RebalanceBackoff: time.Second, Logger: testenv.Logger(t, slog.LevelWarn),
		})
		if err != nil {
			t.Fatal(err)
		}
		streams, err := g.CreateMessageStreams(testenv.Context(t, time.Minute), topic, 2)
		if err != nil {
			t.Fatal(err)
		}
		g2members = append(g2members, g)
		for _, s := range streams {
			g2wg.Add(1)
			go func() {
				defer g2wg.Done()
				for m, err := range s.All(g2ctx) {
					if err != nil {
						continue
					}
					g2mu.Lock()
					if int(m.Offset) >= len(expect[m.Partition]) || string(m.Value) != fmt.Sprintf("value-%d", expect[m.Partition][m.Offset]) {
						g2Bad = append(g2Bad, fmt.Sprintf("%d/%d=%q", m.Partition, m.Offset, m.Value))
					} else {
						g2Counts[m.Partition][m.Offset]++
					}
					if m.Offset != g2Next[m.Partition] {
						g2Disorder = append(g2Disorder, fmt.Sprintf("partition %d: offset %d where %d was due", m.Partition, m.Offset, g2Next[m.Partition]))
					}
					g2Next[m.Partition] = m.Offset + 1
					g2mu.Unlock()
				}
			}()
		}
	}

	// Group g1: four processes.
	var children []*consumerChild
	for i := 1; i <= 4; i++ {
		children = append(children, startConsumerChild(t, fmt.Sprintf("member%d", i), ce.zkConnect, "g1", topic, session))
	}
	committed := func(group string) (map[int32]int64, int64) {
		out, sum := map[int32]int64{}, int64(0)
		ctx := testenv.Context(t, 10*time.Second)
		for p := range int32(partitions) {
			off, err := readOffset(ctx, ce.admin, group, topic, p)
			if err != nil {
				t.Fatalf("read offset: %v", err)
			}
			out[p] = off
			sum += max(off, 0)
		}
		return out, sum
	}
	// Progress on every partition too, so that the victim dies in the
	// middle of its work, not before it had any.
	testenv.WaitFor(t, 2*time.Minute, "g1 to commit a quarter of the records, some of every partition", func() (bool, string) {
		offs, sum := committed("g1")
		for _, off := range offs {
			if off <= 0 {
				return false, fmt.Sprintf("%d committed: %v", sum, offs)
			}
		}
		return sum >= int64(n/4), fmt.Sprintf("%d committed", sum)
	})

	victim := children[1]
	owners := readOwners(t, ce.admin, "g1", topic)
	var victimParts []int32
	for p, owner := range owners {
		if owner == victim.id {
			victimParts = append(victimParts, p)
		}
	}
	if len(victimParts) == 0 {
		t.Fatalf("victim %s owns nothing: %v", victim.id, owners)
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	<-victim.exited
	// Commits the victim sent just before dying are applied by now.
	time.Sleep(200 * time.Millisecond)
	lastCommit, _ := committed("g1")
	t.Logf("killed %s owning %v; its last commits %v", victim.id, victimParts, lastCommit)

	testenv.WaitFor(t, session+30*time.Second, "the victim's partitions to move", func() (bool, string) {
		o := readOwners(t, ce.admin, "g1", topic)
		for _, p := range victimParts {
			if o[p] == "" || o[p] == victim.id {
				return false, fmt.Sprintf("owners %v", o)
			}
		}
		return true, ""
	})
	moved := time.Since(killedAt)
	t.Logf("the victim's partitions moved %v after SIGKILL (session timeout %v)", moved.Round(time.Millisecond), session)
	// ZooKeeper expires sessions on tick boundaries (1 s in the test
	// ensemble) and the rebalance backs off 300 ms a retry; the rest is slack
	// for a shared 2-core machine.
	if limit := session + 2*time.Second + 3*300*time.Millisecond + 2*time.Second; moved > limit {
		t.Errorf("hand-over took %v, want within the session timeout plus a rebalance (%v)", moved, limit)
	}

	for _, group := range []string{"g1", "g2"} {
		testenv.WaitFor(t, 3*time.Minute, group+" to commit everything", func() (bool, string) {
			offs, sum := committed(group)
			for p, off := range offs {
				if off != int64(len(expect[p])) {
					return false, fmt.Sprintf("%d of %d committed", sum, n)
				}
			}
			return true, ""
		})
	}
	for _, c := range children {
		if c != victim {
			c.stop(t)
		}
	}
	g2cancel()
	for _, g := range g2members {
		if err := g.Close(testenv.Context(t, 30*time.Second)); err != nil {
			t.Errorf("g2 close: %v", err)
		}
	}
	g2wg.Wait()
	t.Logf("whole run %v", time.Since(start).Round(time.Millisecond))

	// g1: read every member's output.
	type delivery struct{ victim, survivor int32 }
	seen := make([][]delivery, partitions)
	for p := range seen {
		seen[p] = make([]delivery, len(expect[p]))
	}
	var jumps []offsetJump
	for _, c := range children {
		for s := range childStreams {
			jumps = append(jumps, readChildOutput(t, fmt.Sprintf("%s.%d", c.out, s), expect, func(p int32, off int64) {
				if c == victim {
					seen[p][off].victim++
				} else {
					seen[p][off].survivor++
				}
			})...)
		}
	}
	// A member may own a partition, lose it in a rebalance and get it back
	// later at another member's commit: a jump is a loss only if some
	// record of its gap reached nobody.
	for _, j := range jumps {
		for off := j.from + 1; off < j.to; off++ {
			if d := seen[j.partition][off]; d.victim+d.survivor == 0 {
				t.Errorf("%v, and record %d/%d reached no member", j, j.partition, off)
				break
			}
		}
		t.Logf("%v (the partition was owned by another member in between)", j)
	}
	isVictimPart := map[int32]bool{}
	for _, p := range victimParts {
		isVictimPart[p] = true
	}
	var missing, dups, badDups int
	for p := range int32(partitions) {
		for off, d := range seen[p] {
			total := d.victim + d.survivor
			switch {
			case total == 0:
				if missing++; missing <= 5 {
					t.Errorf("g1: record %d/%d never delivered", p, off)
				}
			case total > 1:
				dups++
				if !isVictimPart[p] || int64(off) < lastCommit[p] || d.victim != 1 || d.survivor != 1 {
					if badDups++; badDups <= 5 {
						t.Errorf("g1: record %d/%d delivered %d times by the victim and %d by survivors "+
							"(victim partition %v, its last commit %d)", p, off, d.victim, d.survivor, isVictimPart[p], lastCommit[p])
					}
				}
			}
		}
	}
	t.Logf("g1: %d records, %d missing, %d duplicates (all after the victim's last commit: %v)", n, missing, dups, badDups == 0)

	if len(g2Bad) > 0 {
		t.Errorf("g2: %d records with wrong content, first %v", len(g2Bad), g2Bad[0])
	}
	if len(g2Disorder) > 0 {
		t.Errorf("g2: %d deliveries out of offset order, first %v", len(g2Disorder), g2Disorder[:min(3, len(g2Disorder))])
	}
	var g2Missing, g2Dups int
	for p := range g2Counts {
		for off, c := range g2Counts[p] {
			if c == 0 {
				g2Missing++
			} else if c > 1 {
				g2Dups++
				if g2Dups <= 3 {
					t.Errorf("g2: record %d/%d delivered %d times", p, off, c)
				}
			}
		}
	}
	if g2Missing > 0 || g2Dups > 0 {
		t.Errorf("g2: %d missing, %d duplicated of %d", g2Missing, g2Dups, n)
	}
}

// readChildOutput parses a member's output file, checking each record's
// content against what was produced at its offset. It returns where a
// partition's offsets jumped forward past a gap: within one ownership that
// is a loss, but a partition that moved to another member and came back
// legitimately resumes at that member's commit, so each caller judges.
func readChildOutput(t *testing.T, path string, expect [][]int, each func(p int32, off int64)) (jumps []offsetJump) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		t.Fatal(err)
	}
	defer f.Close()
	last := map[int32]int64{}
	sc := bufio.NewScanner(f)
	bad := 0
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) != 3 {
			t.Fatalf("%s: bad line %q", filepath.Base(path), sc.Bytes())
		}
		p64, _ := strconv.ParseInt(string(fields[0]), 10, 32)
		off, _ := strconv.ParseInt(string(fields[1]), 10, 64)
		p := int32(p64)
		if p < 0 || int(p) >= len(expect) || off < 0 || off >= int64(len(expect[p])) ||
			string(fields[2]) != "value-"+strconv.Itoa(expect[p][off]) {
			if bad++; bad <= 5 {
				t.Errorf("%s: record %d/%d has value %q", filepath.Base(path), p, off, fields[2])
			}
			continue
		}
		if prev, ok := last[p]; ok && off > prev+1 {
			jumps = append(jumps, offsetJump{file: filepath.Base(path), partition: p, from: prev, to: off})
		}
		last[p] = off
		each(p, off)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return jumps
}

// offsetJump is a forward jump in one member's deliveries of a partition.
type offsetJump struct {
	file      string
	partition int32
	from, to  int64
}

func (j offsetJump) String() string {
	return fmt.Sprintf("%s: partition %d jumped from offset %d to %d", j.file, j.partition, j.from, j.to)
}
