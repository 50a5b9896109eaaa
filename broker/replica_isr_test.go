package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// switchGate is a gate a test opens and closes: wait blocks while it is
// closed.
type switchGate struct {
	mu   sync.Mutex
	open chan struct{} // closed while the gate is open
}

func newSwitchGate() *switchGate {
	g := &switchGate{open: make(chan struct{})}
	close(g.open)
	return g
}

func (g *switchGate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default:
	}
}

func (g *switchGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

func (g *switchGate) wait() { g.hold(nil) }

// hold waits while the gate is shut, first signalling entered (if not nil
// and not full) when it does hold the caller: a write that passed an open
// gate must not pass for a held one (the ISR shrink's write, before the
// gate was shut, did, and the test went on before the expansion began).
func (g *switchGate) hold(entered chan<- struct{}) {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	select {
	case <-ch:
		return
	default:
	}
	if entered != nil {
		select {
		case entered <- struct{}{}:
		default:
		}
	}
	<-ch
}

// appendGatedLog is a partition log whose replica appends wait for a
// switchGate on the broker gated names.
type appendGatedLog struct {
	partition.StorageLog
	broker int32
	gated  *atomic.Int32
	gate   *switchGate
}

func (l appendGatedLog) AppendReplica(batches []byte) (partition.AppendResult, error) {
	if l.gated.Load() == l.broker {
		l.gate.wait()
	}
	return l.StorageLog.AppendReplica(batches)
}

// gatedStateSession holds the writes of partition state nodes whose path
// contains match by the broker gated names while its gate is closed,
// telling entered.
type gatedStateSession struct {
	coord.Session
	broker  int32
	gated   *atomic.Int32
	match   string
	gate    *switchGate
	entered chan struct{}
}

func (s gatedStateSession) Set(ctx context.Context, path string, data []byte, version int32) (coord.Stat, error) {
	if s.gated.Load() == s.broker && strings.Contains(path, s.match) && strings.HasSuffix(path, "/state") {
		s.gate.hold(s.entered)
	}
	return s.Session.Set(ctx, path, data, version)
}

// TestISRExpansionCountsJoiningFollower: a leader that is its partition's
// only in-sync replica, adding a follower that caught up, counts on that
// follower from the moment it writes the new ISR. The controller may
// elect from the written ISR before the leader learns that the write
// succeeded, so a record acknowledged (acks=all) meanwhile without the
// follower would be lost when the follower becomes leader. Here the write
// is held and the follower stops copying: the produce is not acknowledged
// until the follower has the record.
func TestISRExpansionCountsJoiningFollower(t *testing.T) {
	const topic = "expand-topic"
	srv := memcoord.NewServer()
	stateGate, appendGate := newSwitchGate(), newSwitchGate()
	entered := make(chan struct{}, 1)
	// The leader's state writes and the follower's appends can be held,
	// once the test knows which broker is which.
	var gatedLeader, gatedFollower atomic.Int32
	var bs []*testBroker
	for id := int32(1); id <= 2; id++ {
		connect := WithCoordinator(func(context.Context) (coord.Session, error) {
			return gatedStateSession{Session: srv.Connect(memcoord.Config{}), broker: id, gated: &gatedLeader,
				match: topic, gate: stateGate, entered: entered}, nil
		})
		gateFollower := func(b *Broker) {
			inner := b.openLog
			b.openLog = func(dir string, s config.LogSettings) (partition.Log, error) {
				l, err := inner(dir, s)
				if err != nil || !strings.HasPrefix(filepath.Base(dir), topic) {
					return l, err
				}
				return appendGatedLog{StorageLog: l.(partition.StorageLog), broker: id, gated: &gatedFollower, gate: appendGate}, nil
			}
		}
		bs = append(bs, newTestBroker(t, func(c *config.Config) {
			c.BrokerID = id
			c.Replication.LagTimeMax = time.Second
		}, connect, gateFollower))
	}
	// Cleanups run last first: the gates open before the brokers close.
	t.Cleanup(func() { stateGate.release(); appendGate.release() })
	ctx := testenv.Context(t, 3*time.Minute)
	testenv.WaitFor(t, time.Minute, "the brokers see each other", func() (bool, string) {
		m, err := bs[0].clusterMember()
		if err != nil {
			return false, err.Error()
		}
		return len(m.Metadata().Brokers) == 2, fmt.Sprintf("%d brokers", len(m.Metadata().Brokers))
	})
	if err := bs[0].createTopic(ctx, topic, 1, 2, nil, false); err != nil {
		t.Fatal(err)
	}
	var leader, follower *testBroker
	testenv.WaitFor(t, time.Minute, "a leader", func() (bool, string) {
		for i, b := range bs {
			if p := b.partitions.Replica(topic, 0); p != nil && p.Leading() {
				leader, follower = b, bs[1-i]
				return true, ""
			}
		}
		return false, "none leads"
	})
	gatedLeader.Store(leader.cfg.BrokerID)
	gatedFollower.Store(follower.cfg.BrokerID)
	isrOf := func() []int32 {
		p := leader.partitions.Replica(topic, 0)
		if p == nil || !p.Leading() {
			return nil
		}
		return p.ISR()
	}
	testenv.WaitFor(t, time.Minute, "both in sync", func() (bool, string) {
		isr := isrOf()
		return len(isr) == 2, fmt.Sprintf("ISR %v", isr)
	})
	conn := dialRaw(t, leader.Addr())
	produce := func(acks int16, timeout time.Duration, v string) *kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := produceRequest(9, acks, topic, 0, makeBatch(1, -1, -1, -1, v))
		req.TimeoutMillis = int32(timeout.Milliseconds())
		sp := conn.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		return &sp
	}

	// The follower falls behind and leaves the ISR: broker 1 alone
	// acknowledges acks=all.
	appendGate.shut()
	if sp := produce(1, 5*time.Second, "a"); sp.ErrorCode != 0 {
		t.Fatalf("acks=1 produce: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	testenv.WaitFor(t, time.Minute, "the follower out of the ISR", func() (bool, string) {
		isr := isrOf()
		return len(isr) == 1 && isr[0] == leader.cfg.BrokerID, fmt.Sprintf("ISR %v", isr)
	})
	if sp := produce(-1, 5*time.Second, "b"); sp.ErrorCode != 0 {
		t.Fatalf("acks=all produce with the leader alone in sync: %v", kerr.ErrorForCode(sp.ErrorCode))
	}

	// The follower catches up; the leader's write of the ISR with it is held.
	stateGate.shut()
	appendGate.release()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the leader never wrote an ISR with the follower")
	}
	fp := follower.partitions.Replica(topic, 0)
	testenv.WaitFor(t, time.Minute, "the follower has both records", func() (bool, string) {
		return fp.Log().EndOffset() == 2, fmt.Sprintf("end offset %d", fp.Log().EndOffset())
	})
	appendGate.shut()
	// The follower copies no more: a record acknowledged now would be on
	// the leader alone while the ISR being written names the follower.
	sp := produce(-1, 2*time.Second, "c")
	if sp.ErrorCode == 0 {
		t.Fatalf("acks=all produce acknowledged at offset %d while the follower joining the ISR lacks it (follower's end offset %d)",
			sp.BaseOffset, fp.Log().EndOffset())
	}
	if sp.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("acks=all produce: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(sp.ErrorCode))
	}
	// Released, the follower copies the record and the ISR write lands.
	appendGate.release()
	stateGate.release()
	testenv.WaitFor(t, time.Minute, "both in sync with the record", func() (bool, string) {
		isr := isrOf()
		p := leader.partitions.Replica(topic, 0)
		return len(isr) == 2 && p.HighWatermark() == 3, fmt.Sprintf("ISR %v, high watermark %d", isr, p.HighWatermark())
	})
	if sp := produce(-1, 10*time.Second, "d"); sp.ErrorCode != 0 || sp.BaseOffset != 3 {
		t.Fatalf("acks=all produce after the expansion: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
}
