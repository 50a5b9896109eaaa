package cluster

import (
	"fmt"
	"slices"
	"testing"
)

// TestElect: every election rule, on the state read and the brokers'
// liveness, shutdown and the unclean and preferred switches.
func TestElect(t *testing.T) {
	none := []int32(nil)
	tests := []struct {
		name      string
		replicas  []int32
		leader    int32
		isr       []int32
		noState   bool
		dead      []int32
		shutting  []int32
		unclean   bool
		preferred bool
		wantL     int32
		wantISR   []int32
	}{
		{name: "new partition: live replicas form the ISR", replicas: []int32{1, 2, 3}, noState: true,
			wantL: 1, wantISR: []int32{1, 2, 3}},
		{name: "new partition: dead preferred replica left out", replicas: []int32{1, 2, 3}, noState: true, dead: []int32{1},
			wantL: 2, wantISR: []int32{2, 3}},
		{name: "new partition: shutting-down replica left out", replicas: []int32{1, 2, 3}, noState: true, shutting: []int32{1},
			wantL: 2, wantISR: []int32{2, 3}},
		{name: "new partition: none live", replicas: []int32{1, 2}, noState: true, dead: []int32{1, 2},
			wantL: -1, wantISR: none},
		{name: "empty ISR is a partition never led", replicas: []int32{1, 2}, leader: -1, isr: []int32{}, dead: []int32{1},
			wantL: 2, wantISR: []int32{2}},
		{name: "all fine: unchanged", replicas: []int32{1, 2, 3}, leader: 1, isr: []int32{1, 2, 3},
			wantL: 1, wantISR: []int32{1, 2, 3}},
		{name: "dead follower leaves the ISR", replicas: []int32{1, 2, 3}, leader: 1, isr: []int32{1, 2, 3}, dead: []int32{3},
			wantL: 1, wantISR: []int32{1, 2}},
		{name: "dead leader: next ISR member in assignment order", replicas: []int32{1, 2, 3}, leader: 1, isr: []int32{3, 1, 2}, dead: []int32{1},
			wantL: 2, wantISR: []int32{3, 2}},
		{name: "dead leader: a live replica outside the ISR is skipped", replicas: []int32{1, 2, 3}, leader: 1, isr: []int32{1, 3}, dead: []int32{1},
			wantL: 3, wantISR: []int32{3}},
		{name: "no live ISR member, clean: offline, ISR kept", replicas: []int32{1, 2}, leader: 1, isr: []int32{1}, dead: []int32{1},
			wantL: -1, wantISR: []int32{1}},
		{name: "no live ISR member, clean, two dead: ISR kept whole", replicas: []int32{1, 2, 3}, leader: 1, isr: []int32{1, 2}, dead: []int32{1, 2},
			wantL: -1, wantISR: []int32{1, 2}},
		{name: "no live ISR member, unclean: first live replica alone", replicas: []int32{1, 2, 3}, leader: 1, isr: []int32{1}, dead: []int32{1}, unclean: true,
			wantL: 2, wantISR: []int32{2}},
		{name: "unclean with nobody live: offline", replicas: []int32{1, 2}, leader: 1, isr: []int32{1}, dead: []int32{1, 2}, unclean: true,
			wantL: -1, wantISR: []int32{1}},
		{name: "unclean not used while an ISR member is live", replicas: []int32{1, 2, 3}, leader: 1, isr: []int32{1, 3}, dead: []int32{1}, unclean: true,
			wantL: 3, wantISR: []int32{3}},
		{name: "offline partition: ISR member returns", replicas: []int32{1, 2}, leader: -1, isr: []int32{1}, dead: []int32{},
			wantL: 1, wantISR: []int32{1}},
		{name: "offline partition: non-ISR replica returning is not elected", replicas: []int32{1, 2}, leader: -1, isr: []int32{1}, dead: []int32{1},
			wantL: -1, wantISR: []int32{1}},
		{name: "shutting-down leader hands over", replicas: []int32{1, 2}, leader: 1, isr: []int32{1, 2}, shutting: []int32{1},
			wantL: 2, wantISR: []int32{2}},
		{name: "shutting-down leader without successor keeps leading", replicas: []int32{1, 2}, leader: 1, isr: []int32{1}, shutting: []int32{1}, unclean: true,
			wantL: 1, wantISR: []int32{1}},
		{name: "shutting-down leader, other ISR member dead", replicas: []int32{1, 2, 3}, leader: 1, isr: []int32{1, 2}, shutting: []int32{1}, dead: []int32{2},
			wantL: 1, wantISR: []int32{1}},
		{name: "shutting-down follower leaves the ISR", replicas: []int32{1, 2, 3}, leader: 1, isr: []int32{1, 2, 3}, shutting: []int32{2},
			wantL: 1, wantISR: []int32{1, 3}},
		{name: "shutting-down ISR member is not elected", replicas: []int32{1, 2, 3}, leader: 1, isr: []int32{1, 2}, dead: []int32{1}, shutting: []int32{2},
			wantL: -1, wantISR: []int32{1, 2}},
		{name: "preferred replica in the ISR takes over", replicas: []int32{1, 2}, leader: 2, isr: []int32{2, 1}, preferred: true,
			wantL: 1, wantISR: []int32{2, 1}},
		{name: "preferred move waits for the check", replicas: []int32{1, 2}, leader: 2, isr: []int32{2, 1},
			wantL: 2, wantISR: []int32{2, 1}},
		{name: "preferred replica outside the ISR stays follower", replicas: []int32{1, 2}, leader: 2, isr: []int32{2}, preferred: true,
			wantL: 2, wantISR: []int32{2}},
		{name: "shutting-down preferred replica is not moved to", replicas: []int32{1, 2}, leader: 2, isr: []int32{2, 1}, shutting: []int32{1}, preferred: true,
			wantL: 2, wantISR: []int32{2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := brokerStates{live: map[int32]bool{}, shuttingDown: map[int32]bool{}}
			for _, id := range []int32{1, 2, 3} {
				b.live[id] = !slices.Contains(tc.dead, id)
			}
			for _, id := range tc.shutting {
				b.shuttingDown[id] = true
			}
			p := Partition{Replicas: tc.replicas, Leader: tc.leader, LeaderEpoch: 4, ISR: tc.isr, stateVersion: 7}
			if tc.noState {
				p.Leader, p.LeaderEpoch, p.stateVersion = -1, -1, -1
			}
			leader, isr := elect(p, b, tc.unclean, tc.preferred)
			if leader != tc.wantL || !slices.Equal(isr, tc.wantISR) {
				t.Errorf("elect = leader %d ISR %v, want leader %d ISR %v", leader, isr, tc.wantL, tc.wantISR)
			}
			if leader >= 0 && !slices.Contains(isr, leader) {
				t.Errorf("leader %d is not in its ISR %v", leader, isr)
			}
		})
	}
}

// TestUncleanElectionSetting: the topic override wins over the default.
func TestUncleanElectionSetting(t *testing.T) {
	for _, tc := range []struct {
		configs map[string]string
		def     bool
		want    bool
	}{
		{nil, false, false},
		{nil, true, true},
		{map[string]string{UncleanLeaderElectionConfig: "true"}, false, true},
		{map[string]string{UncleanLeaderElectionConfig: "false"}, true, false},
		{map[string]string{UncleanLeaderElectionConfig: "maybe"}, true, true},
	} {
		if got := uncleanElection(Topic{Configs: tc.configs}, tc.def); got != tc.want {
			t.Errorf("configs %v default %v: got %v", tc.configs, tc.def, got)
		}
	}
}

// TestRackAwareKafkaExample: the example of Kafka's AdminUtils
// documentation, whose rack-alternated list is 0, 3, 1, 5, 4, 2.
func TestRackAwareKafkaExample(t *testing.T) {
	racks := map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
	brokers := []int32{0, 1, 2, 3, 4, 5}
	if got := rackAlternated(brokers, racks); !slices.Equal(got, []int32{0, 3, 1, 5, 4, 2}) {
		t.Fatalf("rack-alternated list %v", got)
	}
	got, err := assignReplicasByRack(brokers, racks, 7, 3)
	must(t, err)
	want := "[[0 3 1] [3 1 5] [1 5 4] [5 4 2] [4 2 0] [2 0 3] [0 4 2]]"
	if fmt.Sprint(got) != want {
		t.Errorf("assignment\n got %v\nwant %s", got, want)
	}
}

// TestRackAwareProperties: over many cluster shapes, each partition's
// replicas are distinct brokers, on distinct racks when there are at
// least as many racks as replicas (else every rack holds one), and
// leaders spread evenly over brokers.
func TestRackAwareProperties(t *testing.T) {
	for nBrokers := 2; nBrokers <= 9; nBrokers++ {
		for nRacks := 1; nRacks <= nBrokers; nRacks++ {
			for rf := int16(2); rf <= int16(min(nBrokers, 4)); rf++ {
				for _, partitions := range []int32{1, 7, int32(3 * nBrokers), 50} {
					name := fmt.Sprintf("brokers=%d racks=%d rf=%d partitions=%d", nBrokers, nRacks, rf, partitions)
					brokers := make([]int32, nBrokers)
					racks := map[int32]string{}
					for i := range brokers {
						brokers[i] = int32(10 + i)
						// Uneven racks: broker i on rack i*i mod nRacks.
						racks[brokers[i]] = fmt.Sprintf("r%d", (i*i+i/nRacks)%nRacks)
					}
					used := map[string]bool{}
					for _, r := range racks {
						used[r] = true
					}
					got, err := assignReplicasByRack(brokers, racks, partitions, rf)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if int32(len(got)) != partitions {
						t.Fatalf("%s: %d partitions", name, len(got))
					}
					leaders := map[int32]int32{}
					for p, rs := range got {
						if len(rs) != int(rf) {
							t.Fatalf("%s: partition %d has %v", name, p, rs)
						}
						seenRacks := map[string]bool{}
						for i, b := range rs {
							if slices.Contains(rs[:i], b) || racks[b] == "" {
								t.Fatalf("%s: partition %d: %v", name, p, rs)
							}
							seenRacks[racks[b]] = true
						}
						if want := min(int(rf), len(used)); len(seenRacks) != want {
							t.Errorf("%s: partition %d %v spans %d racks, want %d", name, p, rs, len(seenRacks), want)
						}
						leaders[rs[0]]++
					}
					lo, hi := partitions/int32(nBrokers), (partitions+int32(nBrokers)-1)/int32(nBrokers)
					for _, b := range brokers {
						if n := leaders[b]; n < lo || n > hi {
							t.Errorf("%s: broker %d leads %d partitions, want %d..%d", name, b, n, lo, hi)
						}
					}
				}
			}
		}
	}
}

// TestRackAwareFallback: a broker without a rack, or one replica, gives
// the plain assignment.
func TestRackAwareFallback(t *testing.T) {
	brokers := []int32{1, 2, 3}
	plain, err := assignReplicas(brokers, 6, 2)
	must(t, err)
	for _, tc := range []struct {
		racks map[int32]string
		rf    int16
	}{
		{map[int32]string{1: "a", 2: "b"}, 2},
		{map[int32]string{1: "b", 2: "a", 3: "a"}, 1},
	} {
		got, err := assignReplicasByRack(brokers, tc.racks, 6, tc.rf)
		must(t, err)
		want := plain
		if tc.rf == 1 {
			want, _ = assignReplicas(brokers, 6, 1)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("racks %v rf %d: got %v, want the plain %v", tc.racks, tc.rf, got, want)
		}
	}
	_, err = assignReplicasByRack(brokers, map[int32]string{1: "a", 2: "b", 3: "a"}, 6, 4)
	wantErr(t, err, ErrInvalidReplicationFactor, "rf 4 on 3 brokers")
}
