package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestThreeMembers: one controller; a 12-partition topic gets 4 leaders
// per broker; metadata converges on every member; the nodes have Kafka's
// shapes.
func TestThreeMembers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2, 3)
		if ms[1].IsController() || ms[2].IsController() {
			t.Fatal("more than one controller")
		}
		configs := map[string]string{"retention.ms": "60000", "segment.bytes": "1048576"}
		// Any member may create topics, not only the controller.
		must(t, ms[2].CreateTopic(ctxFor(t), "events", 12, 1, configs))
		want := []int32{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}
		for _, m := range ms {
			snap := await(t, m, "leaders of events", leadersAre("events", want))
			counts := map[int32]int{}
			for _, p := range snap.Topics["events"].Partitions {
				counts[p.Leader]++
				if !slices.Equal(p.Replicas, []int32{p.Leader}) || !slices.Equal(p.ISR, []int32{p.Leader}) || p.LeaderEpoch != 0 {
					t.Errorf("member %d partition %d: %+v", m.ID(), p.ID, p)
				}
				if m.Leads("events", p.ID) != (p.Leader == m.ID()) {
					t.Errorf("member %d: Leads(events, %d) disagrees with leader %d", m.ID(), p.ID, p.Leader)
				}
			}
			if !maps.Equal(counts, map[int32]int{1: 4, 2: 4, 3: 4}) {
				t.Errorf("member %d: leaders per broker %v", m.ID(), counts)
			}
			if !maps.Equal(snap.Topics["events"].Configs, configs) {
				t.Errorf("member %d: configs %v", m.ID(), snap.Topics["events"].Configs)
			}
			if snap.Controller != 1 || snap.ControllerEpoch != 1 {
				t.Errorf("member %d: controller %d epoch %d", m.ID(), snap.Controller, snap.ControllerEpoch)
			}
			for i, b := range snap.Brokers {
				id := int32(i + 1)
				wantB := Broker{ID: id, Host: "127.0.0.1", Port: 9000 + id, Rack: fmt.Sprintf("rack-%d", id%2),
					Endpoints: []string{fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", 9000+id)},
					Protocols: map[string]string{"PLAINTEXT": "PLAINTEXT"}}
				if fmt.Sprint(b) != fmt.Sprint(wantB) {
					t.Errorf("member %d: broker %+v, want %+v", m.ID(), b, wantB)
				}
			}
		}
		if m := ms[0]; m.Leads("events", 12) || m.Leads("nope", 0) {
			t.Error("Leads reports a partition that does not exist")
		}
		// The raw nodes, byte for byte as Kafka writes them.
		for path, want := range map[string]string{
			"/brokers/ids/2": `{"version":5,"host":"127.0.0.1","port":9002,"endpoints":["PLAINTEXT://127.0.0.1:9002"],` +
				`"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"jmx_port":-1,"timestamp":"1700000000123","rack":"rack-0","features":{}}`,
			"/controller":       `{"version":1,"brokerid":1,"timestamp":"1700000000123"}`,
			"/controller_epoch": `1`,
			"/brokers/topics/events/partitions/4/state": `{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2]}`,
			"/config/topics/events":                     `{"version":1,"config":{"retention.ms":"60000","segment.bytes":"1048576"}}`,
		} {
			if got, _ := e.get(t, path); string(got) != want {
				t.Errorf("%s:\n got %s\nwant %s", path, got, want)
			}
		}
		raw, _ := e.get(t, "/brokers/topics/events")
		var assignment struct {
			Version    int                `json:"version"`
			Partitions map[string][]int32 `json:"partitions"`
		}
		must(t, json.Unmarshal(raw, &assignment))
		if assignment.Version != 3 || len(assignment.Partitions) != 12 || !slices.Equal(assignment.Partitions["10"], []int32{2}) {
			t.Errorf("assignment %s", raw)
		}
		_, st := e.get(t, "/brokers/ids/3")
		if st.EphemeralOwner != ms[2].session.ID() {
			t.Errorf("/brokers/ids/3 owned by 0x%x, want member 3's session 0x%x", st.EphemeralOwner, ms[2].session.ID())
		}
	})
}

// TestMemberCrash: a broker dies without leaving; its partitions go to
// leader -1 on the others; when it comes back they are its again.
func TestMemberCrash(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2, 3)
		must(t, ms[0].CreateTopic(ctxFor(t), "events", 12, 1, nil))
		for _, m := range ms {
			await(t, m, "leaders of events", leadersAre("events", []int32{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}))
		}
		e.crash(t, ms[1])
		down := []int32{1, -1, 3, 1, -1, 3, 1, -1, 3, 1, -1, 3}
		for _, m := range []*Member{ms[0], ms[2]} {
			snap := await(t, m, "broker 2's partitions without leader", func(s Snapshot) bool {
				_, live := s.Broker(2)
				return !live && leadersAre("events", down)(s)
			})
			for _, p := range snap.Topics["events"].Partitions {
				wantEpoch, wantISR := int32(0), []int32{p.Replicas[0]}
				if p.Leader == -1 {
					wantEpoch = 1 // Kafka keeps the last ISR of an offline partition
				}
				if p.LeaderEpoch != wantEpoch || !slices.Equal(p.ISR, wantISR) {
					t.Errorf("member %d partition %d: %+v", m.ID(), p.ID, p)
				}
			}
		}
		back := e.join(t, 2)
		all := []int32{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}
		for _, m := range []*Member{ms[0], back, ms[2]} {
			snap := await(t, m, "broker 2 leads again", leadersAre("events", all))
			if p, _ := snap.Partition("events", 1); p.LeaderEpoch != 2 {
				t.Errorf("member %d: partition 1 leader epoch %d, want 2", m.ID(), p.LeaderEpoch)
			}
		}
		if !back.Leads("events", 7) || back.IsController() {
			t.Errorf("rejoined broker: leads 7 = %v, controller = %v", back.Leads("events", 7), back.IsController())
		}
	})
}

// TestControllerFailover: the controller dies; another is elected with the
// next epoch, creates leaders for new topics and takes the dead broker's
// partitions offline.
func TestControllerFailover(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2, 3)
		must(t, ms[1].CreateTopic(ctxFor(t), "events", 6, 1, nil))
		await(t, ms[2], "leaders of events", leadersAre("events", []int32{1, 2, 3, 1, 2, 3}))
		e.crash(t, ms[0])
		var newController int32
		for _, m := range ms[1:] {
			snap := await(t, m, "a new controller", func(s Snapshot) bool {
				return s.Controller >= 2 && s.ControllerEpoch == 2 && leadersAre("events", []int32{-1, 2, 3, -1, 2, 3})(s)
			})
			newController = snap.Controller
		}
		testenv.WaitFor(t, waitTimeout, "new controller in office", func() (bool, string) { return ms[newController-1].IsController(), "" })
		if ms[1].IsController() == ms[2].IsController() {
			t.Fatalf("controllers: 2=%v 3=%v", ms[1].IsController(), ms[2].IsController())
		}
		if got, _ := e.get(t, "/controller_epoch"); string(got) != "2" {
			t.Errorf("/controller_epoch = %s, want 2", got)
		}
		must(t, ms[1].CreateTopic(ctxFor(t), "after", 4, 1, nil))
		snap := await(t, ms[2], "leaders of after", leadersAre("after", []int32{2, 3, 2, 3}))
		if p, _ := snap.Partition("after", 0); !strings.Contains(string(mustGet(t, e, statePath("after", 0))), `"controller_epoch":2`) {
			t.Errorf("state of after-0 not written by epoch 2: %+v", p)
		}
		e.join(t, 1)
		await(t, ms[1], "broker 1 leads again", leadersAre("events", []int32{1, 2, 3, 1, 2, 3}))
		if ms[1].Metadata().Controller != newController {
			t.Errorf("controller moved back on rejoin: %d", ms[1].Metadata().Controller)
		}
	})
}

func mustGet(t *testing.T, e *env, path string) []byte {
	t.Helper()
	data, _ := e.get(t, path)
	return data
}

// TestFailoverToNextReplica: with two replicas on racks, CreateTopic
// assigns rack-aware; the surviving ISR member takes over a dead leader's
// partitions, the dead one leaves every ISR, and it does not get
// leadership back on rejoining: it is out of the ISR until a leader adds
// it (and automatic preferred-leader moves are off in these members).
func TestFailoverToNextReplica(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2, 3)
		must(t, ms[0].CreateTopic(ctxFor(t), "pairs", 6, 2, nil))
		// Racks: rack-0 {2}, rack-1 {1, 3}; rack-alternated list 2, 1, 3.
		snap := await(t, ms[0], "leaders of pairs", leadersAre("pairs", []int32{2, 1, 3, 2, 1, 3}))
		var replicas [][]int32
		for _, p := range snap.Topics["pairs"].Partitions {
			replicas = append(replicas, p.Replicas)
			if !slices.Equal(p.ISR, p.Replicas) || p.OfflineReplicas != nil {
				t.Errorf("new partition %+v: want ISR = replicas, none offline", p)
			}
		}
		if fmt.Sprint(replicas) != "[[2 1] [1 2] [3 2] [2 1] [1 2] [3 2]]" {
			t.Fatalf("replicas %v", replicas)
		}
		e.crash(t, ms[1])
		for _, m := range []*Member{ms[0], ms[2]} {
			// The cache reads each state node and the broker registrations
			// on their own watch events: wait until every partition shows
			// the controller's write and broker 2 gone.
			snap = await(t, m, "broker 2's partitions fail over", func(s Snapshot) bool {
				return leadersAre("pairs", []int32{1, 1, 3, 1, 1, 3})(s) &&
					!slices.ContainsFunc(s.Topics["pairs"].Partitions, func(p Partition) bool {
						return p.LeaderEpoch != 1 || !slices.Equal(p.OfflineReplicas, []int32{2})
					})
			})
			for _, p := range snap.Topics["pairs"].Partitions {
				if !slices.Equal(p.ISR, []int32{p.Leader}) || p.LeaderEpoch != 1 || !slices.Equal(p.OfflineReplicas, []int32{2}) {
					t.Errorf("member %d after the crash: %+v", m.ID(), p)
				}
			}
		}
		back := e.join(t, 2)
		snap = await(t, back, "broker 2 back and visible", func(s Snapshot) bool {
			_, ok := s.Broker(2)
			p, _ := s.Partition("pairs", 0)
			return ok && p.OfflineReplicas == nil
		})
		for _, p := range snap.Topics["pairs"].Partitions {
			if p.Leader == 2 || slices.Contains(p.ISR, 2) || p.LeaderEpoch != 1 {
				t.Errorf("rejoined broker 2 got %+v without being added to the ISR", p)
			}
		}
	})
}

// TestDuplicateBrokerID: a second broker with a registered id and other
// endpoints is refused at once and leaves the first one's registration
// alone.
func TestDuplicateBrokerID(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		m := e.join(t, 1)
		other := e.config(1)
		other.Port++
		start := time.Now()
		_, err := Join(ctxFor(t), e.factory, other)
		wantErr(t, err, ErrBrokerIDRegistered, "second join of id 1")
		if took := time.Since(start); took >= StaleRegistrationSlack {
			t.Errorf("refused after %v, want at once", took)
		}
		if !strings.Contains(err.Error(), "broker id 1 is already registered in ZooKeeper by another broker") {
			t.Errorf("message: %v", err)
		}
		if _, st := e.get(t, brokerPath(1)); st.EphemeralOwner != m.session.ID() {
			t.Errorf("registration owner 0x%x, want 0x%x", st.EphemeralOwner, m.session.ID())
		}
		// The id is free again once its owner leaves.
		must(t, m.Close())
		e.join(t, 1)
	})
}

// TestSessionExpiry: an expired member registers on a new session; while
// it cannot, it keeps serving its last metadata and the others see it gone.
func TestSessionExpiry(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2)
		must(t, ms[0].CreateTopic(ctxFor(t), "events", 4, 1, nil))
		for _, m := range ms {
			await(t, m, "leaders of events", leadersAre("events", []int32{1, 2, 1, 2}))
		}
		e.refuse.Store(true)
		old := e.expire(t, ms[1])
		await(t, ms[0], "broker 2 gone", leadersAre("events", []int32{1, -1, 1, -1}))
		// Cut off, member 2 still answers from its last metadata.
		if snap := ms[1].Metadata(); !ms[1].Leads("events", 1) || len(snap.Brokers) != 2 {
			t.Errorf("stale metadata lost during expiry:\n%s", dump(snap))
		}
		e.refuse.Store(false)
		for _, m := range ms {
			await(t, m, "broker 2 back", leadersAre("events", []int32{1, 2, 1, 2}))
		}
		testenv.WaitFor(t, waitTimeout, "member 2 on a new session", func() (bool, string) {
			ms[1].mu.Lock()
			defer ms[1].mu.Unlock()
			return ms[1].session.ID() != old.ID(), ""
		})
		if _, st := e.get(t, brokerPath(2)); st.EphemeralOwner == old.ID() || st.EphemeralOwner != ms[1].session.ID() {
			t.Errorf("registration owner 0x%x; old session 0x%x, new 0x%x", st.EphemeralOwner, old.ID(), ms[1].session.ID())
		}
		// The controller's expiry: someone takes over with the next epoch
		// and the expired member comes back as a broker.
		e.expire(t, ms[0])
		for _, m := range ms {
			await(t, m, "controller epoch 2, both brokers leading", func(s Snapshot) bool {
				return s.ControllerEpoch == 2 && s.Controller >= 1 && len(s.Brokers) == 2 &&
					leadersAre("events", []int32{1, 2, 1, 2})(s)
			})
		}
		testenv.WaitFor(t, waitTimeout, "one controller in office", func() (bool, string) { return ms[0].IsController() != ms[1].IsController(), "" })
		must(t, ms[0].CreateTopic(ctxFor(t), "later", 2, 1, nil))
		await(t, ms[1], "leaders of later", leadersAre("later", []int32{1, 2}))
	})
}

// TestCreateTopicErrors: Kafka's validation of CreateTopics.
func TestCreateTopicErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2)
		m := ms[1]
		ctx := ctxFor(t)
		must(t, m.CreateTopic(ctx, "a_b", 1, 1, nil))
		for _, c := range []struct {
			name       string
			topic      string
			partitions int32
			rf         int16
			configs    map[string]string
			want       error
		}{
			{"exists", "a_b", 1, 1, nil, ErrTopicExists},
			{"collides", "a.b", 1, 1, nil, ErrInvalidTopic},
			{"bad name", "a/b", 1, 1, nil, ErrInvalidTopic},
			{"empty name", "", 1, 1, nil, ErrInvalidTopic},
			{"no partitions", "p0", 0, 1, nil, ErrInvalidPartitions},
			{"negative partitions", "pn", -3, 1, nil, ErrInvalidPartitions},
			{"rf above brokers", "rf3", 1, 3, nil, ErrInvalidReplicationFactor},
			{"rf zero", "rf0", 1, 0, nil, ErrInvalidReplicationFactor},
			{"empty config key", "cfg", 1, 1, map[string]string{"": "x"}, ErrInvalidTopicConfig},
		} {
			wantErr(t, m.CreateTopic(ctx, c.topic, c.partitions, c.rf, c.configs), c.want, c.name)
		}
		for _, name := range []string{"a.b", "p0", "pn", "rf3", "rf0", "cfg"} {
			if e.exists(t, topicPath(name)) || e.exists(t, topicConfigPath(name)) {
				t.Errorf("refused topic %s left nodes behind", name)
			}
		}
		snap := await(t, ms[0], "leader of a_b", leadersAre("a_b", []int32{1}))
		if len(snap.Topics) != 1 {
			t.Errorf("topics %v", snap.TopicNames())
		}
	})
}

// TestDeleteTopic: deletion removes every node of the topic and its
// metadata on every member; the name can be used again.
func TestDeleteTopic(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2, 3)
		ctx := ctxFor(t)
		must(t, ms[0].CreateTopic(ctx, "doomed", 3, 1, map[string]string{"retention.ms": "1"}))
		must(t, ms[0].CreateTopic(ctx, "kept", 2, 1, nil))
		for _, m := range ms {
			await(t, m, "both topics led", func(s Snapshot) bool {
				return leadersAre("doomed", []int32{1, 2, 3})(s) && leadersAre("kept", []int32{1, 2})(s)
			})
		}
		must(t, ms[2].DeleteTopic(ctx, "doomed"))
		for _, m := range ms {
			snap := await(t, m, "doomed gone", func(s Snapshot) bool { _, ok := s.Topics["doomed"]; return !ok })
			if !slices.Equal(snap.TopicNames(), []string{"kept"}) || !leadersAre("kept", []int32{1, 2})(snap) {
				t.Errorf("member %d after delete:\n%s", m.ID(), dump(snap))
			}
		}
		for _, p := range []string{topicPath("doomed"), topicConfigPath("doomed"), deleteTopicPath("doomed")} {
			if e.exists(t, p) {
				t.Errorf("%s still exists", p)
			}
		}
		wantErr(t, ms[1].DeleteTopic(ctx, "doomed"), ErrUnknownTopic, "second delete")
		wantErr(t, ms[1].DeleteTopic(ctx, "never"), ErrUnknownTopic, "delete of unknown topic")
		must(t, ms[1].CreateTopic(ctx, "doomed", 2, 1, nil))
		snap := await(t, ms[0], "doomed re-created", leadersAre("doomed", []int32{1, 2}))
		if tp := snap.Topics["doomed"]; tp.Partitions[0].LeaderEpoch != 0 || len(tp.Configs) != 0 {
			t.Errorf("re-created topic carries old state: %+v", tp)
		}
	})
}

// TestDeleteWithoutController: a deletion request waits for a controller.
func TestDeleteWithoutController(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		m := e.joinAll(t, 1)[0]
		must(t, m.CreateTopic(ctxFor(t), "t", 1, 1, nil))
		await(t, m, "leader of t", leadersAre("t", []int32{1}))
		e.crash(t, m)
		ctx := ctxFor(t)
		// Mark the topic by hand, as an old kafka-topics.sh would.
		_, err := e.admin.Create(ctx, deleteTopicPath("t"), nil, coord.Persistent)
		must(t, err)
		if !e.exists(t, topicPath("t")) {
			t.Fatal("topic deleted with no controller alive")
		}
		m2 := e.join(t, 2)
		await(t, m2, "t deleted by the new controller", func(s Snapshot) bool { return len(s.Topics) == 0 && len(s.deleting) == 0 })
	})
}

// TestStaleControllerFenced: when /controller_epoch moves on under a
// controller, its writes fail, it steps down, and the cluster elects a
// controller with a newer epoch that does the work.
func TestStaleControllerFenced(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2)
		ctx := ctxFor(t)
		_, err := e.admin.Set(ctx, controllerEpochPath, []byte("41"), coord.AnyVersion)
		must(t, err)
		must(t, ms[0].CreateTopic(ctx, "fenced", 2, 1, nil))
		snap := await(t, ms[1], "leaders by a new term", func(s Snapshot) bool {
			return s.ControllerEpoch == 42 && leadersAre("fenced", []int32{1, 2})(s)
		})
		if got := string(mustGet(t, e, statePath("fenced", 1))); !strings.Contains(got, `"controller_epoch":42`) {
			t.Errorf("state written by %s, want epoch 42\n%s", got, dump(snap))
		}
	})
}

// TestCloseLeaves: Close removes the registration and ends the member's
// calls.
func TestCloseLeaves(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2)
		must(t, ms[0].Close())
		must(t, ms[0].Close())
		await(t, ms[1], "broker 1 gone and 2 controlling", func(s Snapshot) bool {
			return len(s.Brokers) == 1 && s.Brokers[0].ID == 2 && s.Controller == 2
		})
		wantErr(t, ms[0].CreateTopic(ctxFor(t), "x", 1, 1, nil), ErrClosed, "create after close")
		if _, err := ms[0].AwaitMetadata(ctxFor(t), func(Snapshot) bool { return false }); !errors.Is(err, ErrClosed) {
			t.Errorf("await after close: %v", err)
		}
		if ms[0].IsController() {
			t.Error("closed member still controller")
		}
	})
}

// TestUpdateTopicConfigs: concurrent updates from two members all land
// (compare-and-set redone on conflict), every member's metadata shows the
// result, an aborted update writes nothing, and an unknown topic is refused.
func TestUpdateTopicConfigs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2)
		ctx := ctxFor(t)
		must(t, ms[0].CreateTopic(ctx, "conf", 1, 1, map[string]string{"retention.ms": "1000"}))
		const perMember = 10
		var wg sync.WaitGroup
		errs := make(chan error, 2*perMember)
		for i, m := range ms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range perMember {
					_, err := m.UpdateTopicConfigs(ctx, "conf", func(c map[string]string) error {
						c[fmt.Sprintf("key.%d.%d", i, j)] = "v"
						return nil
					})
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			must(t, err)
		}
		for _, m := range ms {
			snap := await(t, m, "all updates visible", func(s Snapshot) bool {
				return len(s.Topics["conf"].Configs) == 1+2*perMember
			})
			if got := snap.Topics["conf"].Configs["retention.ms"]; got != "1000" {
				t.Fatalf("retention.ms %q after updates, want the created value 1000", got)
			}
		}
		abort := errors.New("abort")
		_, err := ms[1].UpdateTopicConfigs(ctx, "conf", func(c map[string]string) error {
			c["retention.ms"] = "5"
			return abort
		})
		wantErr(t, err, abort, "aborted update")
		data, _ := e.get(t, topicConfigPath("conf"))
		if strings.Contains(string(data), `"retention.ms":"5"`) {
			t.Fatalf("aborted update was written: %s", data)
		}
		_, err = ms[0].UpdateTopicConfigs(ctx, "nope", func(map[string]string) error { return nil })
		wantErr(t, err, ErrUnknownTopic, "unknown topic")
	})
}

// TestCreateTopicWithAssignment: the given replica lists are written as
// they are, whatever the round-robin would pick and whether or not the
// brokers are live; a broker that joins later leads its partitions; bad
// assignments are refused with CreateTopic's errors and leave no node.
func TestCreateTopicWithAssignment(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2)
		ctx := ctxFor(t)
		// Round-robin would give 1,2,1,2; broker 3 is not live yet.
		want := map[int32][]int32{0: {2}, 1: {2}, 2: {3}, 3: {1}}
		must(t, ms[1].CreateTopicWithAssignment(ctx, "on_disk", "", want, map[string]string{"retention.ms": "7"}))
		var rec topicRecord
		must(t, json.Unmarshal(mustGet(t, e, topicPath("on_disk")), &rec))
		wantRec := map[string][]int32{"0": {2}, "1": {2}, "2": {3}, "3": {1}}
		if !maps.EqualFunc(rec.Partitions, wantRec, slices.Equal) {
			t.Fatalf("assignment node %v, want %v", rec.Partitions, wantRec)
		}
		snap := await(t, ms[0], "leaders of on_disk with broker 3 away", leadersAre("on_disk", []int32{2, 2, -1, 1}))
		if got := snap.Topics["on_disk"].Configs["retention.ms"]; got != "7" {
			t.Errorf("configs %v, want retention.ms=7", snap.Topics["on_disk"].Configs)
		}
		for p, tp := range snap.Topics["on_disk"].Partitions {
			if !slices.Equal(tp.Replicas, want[int32(p)]) {
				t.Errorf("partition %d replicas %v, want %v", p, tp.Replicas, want[int32(p)])
			}
		}
		e.join(t, 3)
		await(t, ms[0], "broker 3 leads partition 2", leadersAre("on_disk", []int32{2, 2, 3, 1}))

		for _, c := range []struct {
			name     string
			topic    string
			replicas map[int32][]int32
			configs  map[string]string
			want     error
		}{
			{"exists", "on_disk", map[int32][]int32{0: {1}}, nil, ErrTopicExists},
			{"collides", "on.disk", map[int32][]int32{0: {1}}, nil, ErrInvalidTopic},
			{"bad name", "a/b", map[int32][]int32{0: {1}}, nil, ErrInvalidTopic},
			{"no partitions", "empty", map[int32][]int32{}, nil, ErrInvalidPartitions},
			{"gap", "gap", map[int32][]int32{0: {1}, 2: {1}}, nil, ErrInvalidPartitions},
			{"negative partition", "neg", map[int32][]int32{-1: {1}}, nil, ErrInvalidPartitions},
			{"no replicas", "norep", map[int32][]int32{0: {1}, 1: {}}, nil, ErrInvalidReplicationFactor},
			{"repeated replica", "dup", map[int32][]int32{0: {1, 1}}, nil, ErrInvalidReplicationFactor},
			{"negative broker", "negb", map[int32][]int32{0: {-1}}, nil, ErrInvalidReplicationFactor},
			{"uneven replicas", "uneven", map[int32][]int32{0: {1, 2}, 1: {2}}, nil, ErrInvalidReplicationFactor},
			{"empty config key", "cfg", map[int32][]int32{0: {1}}, map[string]string{"": "x"}, ErrInvalidTopicConfig},
		} {
			wantErr(t, ms[0].CreateTopicWithAssignment(ctx, c.topic, "", c.replicas, c.configs), c.want, c.name)
			if c.topic != "on_disk" && (e.exists(t, topicPath(c.topic)) || e.exists(t, topicConfigPath(c.topic))) {
				t.Errorf("%s: refused topic %s left nodes behind", c.name, c.topic)
			}
		}
	})
}
