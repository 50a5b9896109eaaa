package cluster

import (
	"slices"
	"strconv"
)

// UncleanLeaderElectionConfig is the topic config (and broker property)
// that lets a replica outside the ISR become leader.
const UncleanLeaderElectionConfig = "unclean.leader.election.enable"

// brokerStates is what an election knows of the brokers.
type brokerStates struct {
	live         map[int32]bool
	shuttingDown map[int32]bool
}

func newBrokerStates(snap Snapshot) brokerStates {
	b := brokerStates{live: make(map[int32]bool, len(snap.Brokers)), shuttingDown: map[int32]bool{}}
	for _, br := range snap.Brokers {
		b.live[br.ID] = true
	}
	for _, id := range snap.ShuttingDown {
		b.shuttingDown[id] = true
	}
	return b
}

// eligible: the broker may lead or stay in an ISR. A broker in controlled
// shutdown is live but not eligible.
func (b brokerStates) eligible(id int32) bool { return b.live[id] && !b.shuttingDown[id] }

// elect returns the leader and ISR that partition p should have, given
// its state as last read (p.stateVersion < 0: no state node yet).
//
//   - A partition without state, or with an empty ISR (created while none
//     of its replicas was live), starts as Kafka's new partitions do: the
//     eligible replicas form the ISR and the first of them leads.
//   - A leader that is eligible and in the ISR keeps leading; the ISR loses
//     the brokers that are not eligible. With preferred set, leadership
//     moves to the first replica of the assignment if that one is in the
//     new ISR.
//   - Otherwise the first replica in assignment order that is in the ISR
//     and eligible leads, with the ISR minus the brokers not eligible.
//   - None such, but the leader is live and in the ISR (it is shutting
//     down and nobody can take over): it keeps leading; only brokers not
//     live or shutting down leave the ISR.
//   - None such and unclean: the first eligible replica leads, alone in
//     the ISR.
//   - Else no leader (-1), and the ISR is kept as it was, as Kafka does, so
//     that its members are the ones that can be elected when they return.
//
// Brokers that are no longer replicas (a cancelled reassignment) are taken
// out of the ISR and the leadership first.
func elect(p Partition, b brokerStates, unclean, preferred bool) (leader int32, isr []int32) {
	// A cancelled reassignment leaves the replicas it added in the ISR,
	// maybe leading: they go, and the leadership is elected anew.
	if !slices.Contains(p.Replicas, p.Leader) {
		p.Leader = -1
	}
	p.ISR = filter(p.ISR, func(id int32) bool { return slices.Contains(p.Replicas, id) })
	if p.stateVersion < 0 || len(p.ISR) == 0 {
		isr = filter(p.Replicas, b.eligible)
		if len(isr) == 0 {
			return -1, p.ISR
		}
		return isr[0], isr
	}
	isr = filter(p.ISR, b.eligible)
	if p.Leader >= 0 && b.eligible(p.Leader) && slices.Contains(p.ISR, p.Leader) {
		if preferred && preferredMove(p, b) {
			return p.Replicas[0], isr
		}
		return p.Leader, isr
	}
	for _, r := range p.Replicas {
		if slices.Contains(isr, r) {
			return r, isr
		}
	}
	if p.Leader >= 0 && b.live[p.Leader] && slices.Contains(p.ISR, p.Leader) {
		return p.Leader, filter(p.ISR, func(id int32) bool { return id == p.Leader || b.eligible(id) })
	}
	if unclean {
		for _, r := range p.Replicas {
			if b.eligible(r) {
				return r, []int32{r}
			}
		}
	}
	return -1, p.ISR
}

// preferredMove reports whether leadership of p should go back to its
// preferred replica: the current leader stays eligible (a leader that
// must go is elected anew, preferred first anyway), and the preferred
// replica is another broker, eligible and in the ISR.
func preferredMove(p Partition, b brokerStates) bool {
	if len(p.Replicas) == 0 || p.stateVersion < 0 || p.Leader < 0 {
		return false
	}
	pref := p.Replicas[0]
	return pref != p.Leader && b.eligible(p.Leader) && slices.Contains(p.ISR, p.Leader) &&
		b.eligible(pref) && slices.Contains(p.ISR, pref)
}

// uncleanElection reads the topic override, else the member default. A
// malformed override falls back to the default, as the broker's own config
// check rejects it at write time.
func uncleanElection(t Topic, def bool) bool {
	if v, ok := t.Configs[UncleanLeaderElectionConfig]; ok {
		if on, err := strconv.ParseBool(v); err == nil {
			return on
		}
	}
	return def
}

func filter(ids []int32, keep func(int32) bool) []int32 {
	var out []int32
	for _, id := range ids {
		if keep(id) {
			out = append(out, id)
		}
	}
	return out
}
