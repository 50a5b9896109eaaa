package cluster

import (
	"slices"
	"testing"
)

// TestAdminElectLeaders: adminElect's decisions, Kafka's outcomes.
func TestAdminElectLeaders(t *testing.T) {
	live := brokerStates{live: map[int32]bool{1: true, 2: true, 3: true}, shuttingDown: map[int32]bool{}}
	part := func(leader int32, isr ...int32) Partition {
		return Partition{Leader: leader, Replicas: []int32{1, 2, 3}, ISR: isr, stateVersion: 3, LeaderEpoch: 4}
	}
	for _, c := range []struct {
		name   string
		p      Partition
		b      brokerStates
		typ    ElectionType
		leader int32
		isr    []int32
		err    error
	}{
		{"preferred leads", part(1, 1, 2, 3), live, ElectPreferred, -1, nil, ErrElectionNotNeeded},
		{"preferred back", part(2, 1, 2, 3), live, ElectPreferred, 1, []int32{1, 2, 3}, nil},
		{"preferred out of the ISR", part(2, 2, 3), live, ElectPreferred, -1, nil, ErrPreferredLeaderNotAvailable},
		{"preferred dead", part(2, 1, 2), brokerStates{live: map[int32]bool{2: true, 3: true}}, ElectPreferred, -1, nil, ErrPreferredLeaderNotAvailable},
		{"unclean, live leader", part(2, 2), live, ElectUnclean, -1, nil, ErrElectionNotNeeded},
		{"unclean, an ISR member live", part(-1, 3), live, ElectUnclean, 3, []int32{3}, nil},
		{"unclean, outside the ISR", part(-1, 1), brokerStates{live: map[int32]bool{2: true, 3: true}}, ElectUnclean, 2, []int32{2}, nil},
		{"unclean, none live", part(-1, 1), brokerStates{live: map[int32]bool{}}, ElectUnclean, -1, nil, ErrEligibleLeadersNotAvailable},
	} {
		leader, isr, err := adminElect(c.p, c.b, c.typ)
		if c.err != nil {
			wantErr(t, err, c.err, c.name)
			continue
		}
		if err != nil || leader != c.leader || !slices.Equal(isr, c.isr) {
			t.Errorf("%s: leader %d isr %v err %v, want %d %v", c.name, leader, isr, err, c.leader, c.isr)
		}
	}
}
