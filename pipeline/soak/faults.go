package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary/tributary/internal/network"
)

// Fault kinds, as the summary table names them.
const (
	KillLeader    = "kill -9 broker (leader)"
	KillFollower  = "kill -9 broker (follower)"
	KillMirror    = "kill -9 mirror"
	KillLoader    = "kill -9 loader"
	KillScheduler = "kill -9 scheduler during a loader run"
	KillAudit     = "kill -9 audit service"
	KillRegistry  = "kill -9 registry"
	StopBroker    = "SIGSTOP broker past its session"
	KillZooKeeper = "kill -9 ZooKeeper member"
	StopDataNode  = "DataNode stopped and restarted"
	CutLink       = "link cut, then slow"
)

// FaultKinds lists every kind.
var FaultKinds = []string{KillLeader, KillFollower, KillMirror, KillLoader, KillScheduler, KillAudit, KillRegistry,
	StopBroker, KillZooKeeper, StopDataNode, CutLink}

// injected is one fault of the run.
type injected struct {
	at    time.Duration // since the producers started
	kind  string
	what  string
	kills int // SIGKILLs it sent
	err   error
}

// faultFunc injects one fault and repairs it; it returns what it did.
type faultFunc func(ctx context.Context, rng *rand.Rand) (what string, kills int, err error)

func (s *Soak) faultKinds() map[string]faultFunc {
	kinds := map[string]faultFunc{
		KillLeader:   func(ctx context.Context, rng *rand.Rand) (string, int, error) { return s.killBroker(ctx, rng, true) },
		KillFollower: func(ctx context.Context, rng *rand.Rand) (string, int, error) { return s.killBroker(ctx, rng, false) },
		KillMirror:   func(ctx context.Context, rng *rand.Rand) (string, int, error) { return s.killOne(ctx, rng, s.mirrors) },
		KillLoader:   func(ctx context.Context, rng *rand.Rand) (string, int, error) { return s.killOne(ctx, rng, s.loaders) },
		KillAudit: func(ctx context.Context, rng *rand.Rand) (string, int, error) {
			return s.killOne(ctx, rng, []*proc{s.audit})
		},
		KillRegistry: func(ctx context.Context, rng *rand.Rand) (string, int, error) {
			return s.killOne(ctx, rng, s.registries)
		},
		StopBroker:    s.pauseBroker,
		KillZooKeeper: s.killZooKeeper,
		StopDataNode:  s.stopDataNode,
		CutLink:       s.cutLink,
	}
	if len(s.schedulers) > 0 {
		kinds[KillScheduler] = s.killScheduler
	}
	if len(s.cfg.Faults) > 0 {
		only := map[string]faultFunc{}
		for _, k := range s.cfg.Faults {
			only[k] = kinds[k]
		}
		return only
	}
	return kinds
}

// runFaults injects faults until produce ends and every kind was injected
// at least once: first every kind in a random order, then random kinds,
// a random gap apart; it stops at once when the soak's ctx ends. A fault
// being repaired then is finished.
func (s *Soak) runFaults(ctx, produce context.Context, rng *rand.Rand) {
	kinds := s.faultKinds()
	var names []string
	for k := range kinds {
		names = append(names, k)
	}
	slices.Sort(names)
	order := rng.Perm(len(names))
	// In a long run onsets are a random gap apart, counted from the
	// previous fault's onset (a fault every 30-60 s), not from its repair:
	// one whose repair took longer than the gap is followed at once. A short
	// run counts the gap from the repair, so that its scaled-down gaps still
	// leave the pipeline a moment between faults.
	next := time.Now()
	for i := 0; ; i++ {
		gap := s.t.gapMin + time.Duration(rng.Int64N(int64(s.t.gapMax-s.t.gapMin)+1))
		next = next.Add(gap)
		if ctx.Err() != nil || (i >= len(names) && produce.Err() != nil) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-produce.Done():
			if i >= len(names) {
				return
			}
			sleep(ctx, time.Until(next))
		case <-time.After(time.Until(next)):
		}
		if now := time.Now(); !s.t.gapFromOnset || next.Before(now) {
			next = now
		}
		var kind string
		if i < len(names) {
			kind = names[order[i]]
		} else {
			kind = names[rng.IntN(len(names))]
		}
		at := time.Since(s.started)
		what, kills, err := kinds[kind](context.WithoutCancel(produce), rng)
		f := injected{at: at, kind: kind, what: what, kills: kills, err: err}
		s.mu.Lock()
		s.faults = append(s.faults, f)
		s.mu.Unlock()
		status := ""
		if err != nil {
			status = " — FAILED: " + err.Error()
		}
		s.printf("%5.0fs  fault %d (at %.0fs): %s: %s%s\n", time.Since(s.started).Seconds(), i+1, at.Seconds(), kind, what, status)
	}
}

func (s *Soak) down(ctx context.Context, rng *rand.Rand) time.Duration {
	d := s.t.down + time.Duration(rng.Int64N(int64(s.t.down)+1))
	sleep(ctx, d)
	return d
}

// killOne SIGKILLs one of ps, keeps it down a while and restarts it.
func (s *Soak) killOne(ctx context.Context, rng *rand.Rand, ps []*proc) (string, int, error) {
	p := ps[rng.IntN(len(ps))]
	if err := p.kill(); err != nil {
		return p.name, 0, err
	}
	d := s.down(ctx, rng)
	if err := p.start(); err != nil {
		return p.name, 1, err
	}
	return fmt.Sprintf("%s (down %v)", p.name, d.Round(time.Second)), 1, p.waitReady(ctx, 2*time.Minute)
}

// partitionOf returns the leader and an in-sync follower of a random
// page-view partition of cluster.
func (s *Soak) partitionOf(ctx context.Context, cluster string, rng *rand.Rand) (partition int32, leader, follower int, err error) {
	cc, err := s.clientConfig(cluster)
	if err != nil {
		return 0, 0, 0, err
	}
	cl, err := network.NewClient(cc)
	if err != nil {
		return 0, 0, 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, Topic)
	if err != nil {
		return 0, 0, 0, err
	}
	partition = int32(rng.IntN(DefaultPartitions))
	pd, ok := md.Topics[Topic].Partitions[partition]
	if !ok || pd.Leader < 0 {
		return partition, 0, 0, fmt.Errorf("%s: %s/%d has no leader", cluster, Topic, partition)
	}
	for _, r := range pd.ISR {
		if r != pd.Leader {
			follower = int(r)
			break
		}
	}
	if follower == 0 {
		return partition, 0, 0, fmt.Errorf("%s: %s/%d has no in-sync follower (ISR %v)", cluster, Topic, partition, pd.ISR)
	}
	return partition, int(pd.Leader), follower, nil
}

func (s *Soak) killBroker(ctx context.Context, rng *rand.Rand, leader bool) (string, int, error) {
	cluster := s.clusters()[rng.IntN(len(s.clusters()))]
	if err := s.waitInSync(ctx, cluster); err != nil {
		return cluster, 0, err
	}
	part, l, f, err := s.partitionOf(ctx, cluster, rng)
	if err != nil {
		return cluster, 0, err
	}
	id, role := f, "follower"
	if leader {
		id, role = l, "leader"
	}
	b := s.brokers[cluster][id-1]
	if err := b.kill(); err != nil {
		return b.name, 0, err
	}
	d := s.down(ctx, rng)
	if err := b.start(); err != nil {
		return b.name, 1, err
	}
	if err := b.waitReady(ctx, 2*time.Minute); err != nil {
		return b.name, 1, err
	}
	return fmt.Sprintf("%s, %s of %s/%d (down %v)", b.name, role, Topic, part, d.Round(time.Second)), 1, s.waitInSync(ctx, cluster)
}

// pauseBroker SIGSTOPs a broker for longer than its ZooKeeper session,
// then SIGCONTs it: it comes back to find its session expired and its
// partitions led elsewhere.
func (s *Soak) pauseBroker(ctx context.Context, rng *rand.Rand) (string, int, error) {
	cluster := s.clusters()[rng.IntN(len(s.clusters()))]
	if err := s.waitInSync(ctx, cluster); err != nil {
		return cluster, 0, err
	}
	b := s.brokers[cluster][rng.IntN(brokersPerCluster)]
	if err := b.signal(syscall.SIGSTOP); err != nil {
		return b.name, 0, err
	}
	d := s.t.session + 4*time.Second
	sleep(ctx, d)
	if err := b.signal(syscall.SIGCONT); err != nil {
		return b.name, 0, err
	}
	return fmt.Sprintf("%s stopped %v (session %v)", b.name, d, s.t.session), 0, s.waitInSync(ctx, cluster)
}

// waitInSync waits until every partition of topics (default the page-view
// topic) on cluster has a leader and its full ISR, so that a fault never
// takes a second replica of one partition.
func (s *Soak) waitInSync(ctx context.Context, cluster string, topics ...string) error {
	if len(topics) == 0 {
		topics = []string{Topic}
	}
	cc, err := s.clientConfig(cluster)
	if err != nil {
		return err
	}
	cl, err := network.NewClient(cc)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var last string
	for {
		md, err := adm.Metadata(ctx, topics...)
		last = ""
		if err != nil {
			last = err.Error()
		}
		for _, t := range topics {
			td, ok := md.Topics[t]
			if err == nil && (!ok || len(td.Partitions) == 0) {
				last = t + " has no partitions yet"
			}
			for _, pd := range td.Partitions {
				if pd.Leader < 0 || pd.Err != nil || len(pd.ISR) < brokersPerCluster {
					last = fmt.Sprintf("%s/%d leader %d ISR %v", t, pd.Partition, pd.Leader, pd.ISR)
				}
			}
		}
		if last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not in sync after 3m: %s", cluster, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// killScheduler waits for a scheduler to run the loader job, then
// SIGKILLs it (its run dies with it).
func (s *Soak) killScheduler(ctx context.Context, rng *rand.Rand) (string, int, error) {
	deadline := time.Now().Add(4 * s.t.loadEvery)
	for time.Now().Before(deadline) {
		for _, p := range s.schedulers {
			pid := p.pid()
			if pid == 0 {
				continue
			}
			if child := childOf(pid, "loader", "run"); child != 0 {
				if err := p.kill(); err != nil {
					return p.name, 0, err
				}
				d := s.down(ctx, rng)
				return fmt.Sprintf("%s while its `loader run` (pid %d) ran (down %v)", p.name, child, d.Round(time.Second)), 1, p.start()
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	what, kills, err := s.killOne(ctx, rng, s.schedulers)
	return what + " (no loader run seen in " + (4 * s.t.loadEvery).String() + ")", kills, err
}

func (s *Soak) killZooKeeper(ctx context.Context, rng *rand.Rand) (string, int, error) {
	n := 1 + rng.IntN(3)
	if err := s.zkControl(ctx, "kill", n); err != nil {
		return fmt.Sprint("member ", n), 0, err
	}
	d := s.down(ctx, rng)
	return fmt.Sprintf("member %d (down %v)", n, d.Round(time.Second)), 1, s.zkControl(ctx, "start", n)
}

func (s *Soak) stopDataNode(ctx context.Context, rng *rand.Rand) (string, int, error) {
	n := 1 + rng.IntN(2)
	if err := s.dataNode(ctx, "stop", n); err != nil {
		return fmt.Sprint("DataNode ", n), 0, err
	}
	d := s.down(ctx, rng) + s.down(ctx, rng)
	return fmt.Sprintf("DataNode %d (down %v)", n, d.Round(time.Second)), 0, s.dataNode(ctx, "start", n)
}

// cutLink cuts a datacenter's link to analytics, restores it with 40 ms
// latency and a bandwidth cap, and returns; the link heals fully later,
// in the background, while other faults go on.
func (s *Soak) cutLink(ctx context.Context, rng *rand.Rand) (string, int, error) {
	dc := Datacenters[rng.IntN(len(Datacenters))]
	l := s.links[dc]
	// A cut during an earlier slow period of the same link supersedes it
	// (that period's end leaves the link alone); waiting for it instead
	// held the schedule up for minutes.
	s.mu.Lock()
	if s.linkGen == nil {
		s.linkGen = map[string]int{}
	}
	s.linkGen[dc]++
	gen := s.linkGen[dc]
	s.mu.Unlock()
	cut := s.t.cutMin + time.Duration(rng.Int64N(int64(s.t.cutMax-s.t.cutMin)+1))
	slow := s.t.slowMin + time.Duration(rng.Int64N(int64(s.t.slowMax-s.t.slowMin)+1))
	// The cap leaves room to catch up: four times the link's steady rate
	// (page views are about 200 bytes each), at least 256 KiB/s.
	bw := max(int64(4*s.cfg.Rate*200), 256<<10)
	l.Cut()
	sleep(ctx, cut)
	l.Restore()
	l.SetLatency(40 * time.Millisecond)
	l.SetBandwidth(bw)
	s.slow.Add(1)
	go func() {
		defer s.slow.Done()
		sleep(ctx, slow)
		s.mu.Lock()
		current := s.linkGen[dc] == gen
		s.mu.Unlock()
		if !current {
			return // a later cut of this link owns it now
		}
		l.SetLatency(0)
		l.SetBandwidth(0)
		s.printf("%5.0fs  link %s healthy again\n", time.Since(s.started).Seconds(), l.Name())
	}()
	return fmt.Sprintf("%s cut for %v, then 40ms and %d KiB/s for %v", l.Name(), cut.Round(time.Second), bw>>10, slow.Round(time.Second)), 0, nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// kindCounts counts the faults by kind, in the table's order.
func kindCounts(fs []injected) (kinds []string, n map[string]int, kills int) {
	n = map[string]int{}
	for _, f := range fs {
		if n[f.kind] == 0 {
			kinds = append(kinds, f.kind)
		}
		n[f.kind]++
		kills += f.kills
	}
	slices.Sort(kinds)
	return kinds, n, kills
}
