package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// assignments records what a kgo member was assigned and revoked, and
// what it holds now.
type assignments struct {
	mu       sync.Mutex
	assigned [][]int32
	revoked  int
	lost     int
	current  map[int32]bool
}

// holds reports whether the member holds exactly ps now.
func (a *assignments) holds(ps []int32) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.current) != len(ps) {
		return false
	}
	for _, p := range ps {
		if !a.current[p] {
			return false
		}
	}
	return true
}

func (a *assignments) drop(ps []int32) {
	for _, p := range ps {
		delete(a.current, p)
	}
}

func (a *assignments) opts() []kgo.Opt {
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			a.mu.Lock()
			defer a.mu.Unlock()
			ps := slices.Clone(m["st"])
			slices.Sort(ps)
			a.assigned = append(a.assigned, ps)
			if a.current == nil {
				a.current = map[int32]bool{}
			}
			for _, p := range ps {
				a.current[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			a.mu.Lock()
			defer a.mu.Unlock()
			if len(m["st"]) > 0 {
				a.revoked++
			}
			a.drop(m["st"])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			a.mu.Lock()
			defer a.mu.Unlock()
			if len(m["st"]) > 0 {
				a.lost++
			}
			a.drop(m["st"])
		}),
	}
}

func (a *assignments) snapshot() ([][]int32, int, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.assigned), a.revoked, a.lost
}

// staticMembers returns instance id -> member id, for a stable group.
func staticMembers(ctx context.Context, adm *kadm.Client, group string) (map[string]string, map[string][]int32, bool) {
	dg, err := adm.DescribeGroups(ctx, group)
	if err != nil || dg[group].State != "Stable" {
		return nil, nil, false
	}
	ids, parts := map[string]string{}, map[string][]int32{}
	for _, m := range dg[group].Members {
		if m.InstanceID == nil {
			return nil, nil, false
		}
		ids[*m.InstanceID] = m.MemberID
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range ca.Topics {
				ps := slices.Clone(t.Partitions)
				slices.Sort(ps)
				parts[*m.InstanceID] = ps
			}
		}
	}
	return ids, parts, true
}

// TestGroupStaticMembership: two franz-go members with group.instance.id
// split a topic. One is closed (static members do not leave) and started
// again within its session timeout: it gets a new member id and its old
// partitions back with no rebalance (the other member is never revoked),
// and the old member id is fenced. A static member whose process stays
// away past its session timeout is removed and its partitions go to the
// other member.
func TestGroupStaticMembership(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) {
		groupTestConfig(c)
		c.Groups.InitialRebalanceDelay = time.Second
	})
	ctx := testenv.Context(t, 2*time.Minute)
	if err := b.CreateTopic(ctx, "st", 6); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(newClient(t, b.Addr()))
	member := func(instance string, a *assignments, session time.Duration) *kgo.Client {
		opts := append([]kgo.Opt{kgo.ConsumerGroup("static"), kgo.ConsumeTopics("st"), kgo.InstanceID(instance),
			kgo.SessionTimeout(session), kgo.HeartbeatInterval(200 * time.Millisecond)}, a.opts()...)
		cl := newClient(t, b.Addr(), opts...)
		go func() {
			for !cl.PollFetches(ctx).IsClientClosed() && ctx.Err() == nil {
			}
		}()
		return cl
	}
	var aA, aB assignments
	clA := member("inst-a", &aA, 20*time.Second)
	member("inst-b", &aB, 20*time.Second)
	var ids map[string]string
	var parts map[string][]int32
	testenv.WaitFor(t, time.Minute, "two stable static members with 3 partitions each", func() (bool, string) {
		var ok bool
		ids, parts, ok = staticMembers(ctx, adm, "static")
		return ok && len(ids) == 2 && len(parts["inst-a"]) == 3 && len(parts["inst-b"]) == 3, ""
	})
	// Both members hold what the group says. Either may have joined after
	// the first generation (the initial delay is a second, which a loaded
	// machine can exceed), so inst-b's callbacks are counted from here.
	testenv.WaitFor(t, 30*time.Second, "both members to hold their assignment", func() (bool, string) {
		return aA.holds(parts["inst-a"]) && aB.holds(parts["inst-b"]), ""
	})
	assignedB0, revokedB0, lostB0 := aB.snapshot()
	oldA := ids["inst-a"]

	// Restart inst-a within its session timeout.
	clA.Close()
	var aA2 assignments
	member("inst-a", &aA2, 20*time.Second)
	testenv.WaitFor(t, 30*time.Second, "the restarted static member's assignment", func() (bool, string) {
		a, _, _ := aA2.snapshot()
		return len(a) >= 1, ""
	})
	got, _, _ := aA2.snapshot()
	if fmt.Sprint(got[0]) != fmt.Sprint(parts["inst-a"]) {
		t.Fatalf("restarted inst-a assigned %v, had %v", got[0], parts["inst-a"])
	}
	ids2, parts2, ok := staticMembers(ctx, adm, "static")
	if !ok || len(ids2) != 2 || ids2["inst-a"] == oldA || ids2["inst-b"] != ids["inst-b"] ||
		fmt.Sprint(parts2) != fmt.Sprint(parts) {
		t.Fatalf("after the restart: members %v parts %v (before %v %v)", ids2, parts2, ids, parts)
	}
	if assignedB, revokedB, lostB := aB.snapshot(); len(assignedB) != len(assignedB0) || revokedB != revokedB0 || lostB != lostB0 {
		t.Fatalf("inst-b saw a rebalance: assigned %v, revoked %d, lost %d (before the restart %v, %d, %d)",
			assignedB, revokedB, lostB, assignedB0, revokedB0, lostB0)
	}

	// The old process's member id is fenced.
	c := dialRaw(t, b.Addr())
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(4)
	hb.Group, hb.MemberID, hb.InstanceID, hb.Generation = "static", oldA, kmsg.StringPtr("inst-a"), 1
	if code := c.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.FencedInstanceID.Code {
		t.Fatalf("heartbeat of the replaced member: error %d, want FENCED_INSTANCE_ID", code)
	}

	// A static member that stays away past its session timeout is removed.
	var aC assignments
	clC := member("inst-c", &aC, time.Second)
	testenv.WaitFor(t, time.Minute, "three stable members", func() (bool, string) {
		ids, _, ok := staticMembers(ctx, adm, "static")
		return ok && len(ids) == 3, ""
	})
	clC.Close()
	testenv.WaitFor(t, time.Minute, "inst-c to expire and the others to share its partitions", func() (bool, string) {
		ids, parts, ok := staticMembers(ctx, adm, "static")
		return ok && len(ids) == 2 && len(parts["inst-a"])+len(parts["inst-b"]) == 6, ""
	})
}
