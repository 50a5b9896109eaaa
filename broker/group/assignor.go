package group

import (
	"bytes"
	"cmp"
	"slices"
)

// The server-side assignors of the consumer group protocol, by the names
// Kafka ships them under (group.consumer.assignors): "uniform", sticky and
// balanced (Kafka's UniformAssignor), and "range", per topic contiguous
// ranges (Kafka's RangeAssignor). Both are pure functions of the members'
// subscriptions, the topics' partition counts and, for uniform, the
// previous target assignment.
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// assignment maps a topic id to its partitions, sorted.
type assignment map[[16]byte][]int32

func (a assignment) topicIDs() [][16]byte {
	ids := make([][16]byte, 0, len(a))
	for id := range a {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y [16]byte) int { return bytes.Compare(x[:], y[:]) })
	return ids
}

func (a assignment) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func (a assignment) has(id [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(a[id], p)
	return ok
}

func (a assignment) add(id [16]byte, p int32) {
	ps := a[id]
	if i, ok := slices.BinarySearch(ps, p); !ok {
		a[id] = slices.Insert(ps, i, p)
	}
}

func (a assignment) remove(id [16]byte, p int32) {
	ps := a[id]
	if i, ok := slices.BinarySearch(ps, p); ok {
		ps = slices.Delete(ps, i, i+1)
		if len(ps) == 0 {
			delete(a, id)
		} else {
			a[id] = ps
		}
	}
}

func (a assignment) clone() assignment {
	out := make(assignment, len(a))
	for id, ps := range a {
		out[id] = slices.Clone(ps)
	}
	return out
}

func (a assignment) equal(b assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for id, ps := range a {
		if !slices.Equal(ps, b[id]) {
			return false
		}
	}
	return true
}

// minus returns the partitions of a not in b.
func (a assignment) minus(b assignment) assignment {
	out := assignment{}
	for id, ps := range a {
		for _, p := range ps {
			if !b.has(id, p) {
				out.add(id, p)
			}
		}
	}
	return out
}

// intersect returns the partitions in both a and b.
func (a assignment) intersect(b assignment) assignment {
	out := assignment{}
	for id, ps := range a {
		for _, p := range ps {
			if b.has(id, p) {
				out.add(id, p)
			}
		}
	}
	return out
}

// assignorInput is what an assignor sees: per member the topic ids it
// subscribes to (that exist), each topic's partition count, and the
// previous target assignment.
type assignorInput struct {
	members    []string // sorted
	subscribed map[string]map[[16]byte]bool
	partitions map[[16]byte]int32
	previous   map[string]assignment
}

type tpID struct {
	id [16]byte
	p  int32
}

// assignUniform keeps every member's previous partitions that it still
// subscribes to, hands the unassigned partitions to the least loaded
// subscribed member, then moves partitions from the most loaded members to
// subscribed members with at least two fewer until no such move is left:
// balanced (to one partition, where subscriptions allow) and sticky.
func assignUniform(in assignorInput) map[string]assignment {
	out := make(map[string]assignment, len(in.members))
	owner := map[tpID]string{}
	for _, m := range in.members {
		out[m] = assignment{}
		for id, ps := range in.previous[m] {
			if !in.subscribed[m][id] {
				continue
			}
			for _, p := range ps {
				tp := tpID{id, p}
				if p < in.partitions[id] && owner[tp] == "" {
					owner[tp] = m
					out[m].add(id, p)
				}
			}
		}
	}
	ids := assignment{}
	for id := range in.partitions {
		ids[id] = nil
	}
	leastLoaded := func(id [16]byte, except string, below int) string {
		best := ""
		for _, m := range in.members {
			if m == except || !in.subscribed[m][id] {
				continue
			}
			if n := out[m].count(); n < below && (best == "" || n < out[best].count()) {
				best = m
			}
		}
		return best
	}
	for _, id := range ids.topicIDs() {
		for p := range in.partitions[id] {
			if owner[tpID{id, p}] != "" {
				continue
			}
			if m := leastLoaded(id, "", int(^uint(0)>>1)); m != "" {
				owner[tpID{id, p}] = m
				out[m].add(id, p)
			}
		}
	}
	// One move at a time, always from the most loaded member that can
	// give a partition away, so that no partition moves twice.
	for {
		byLoad := slices.Clone(in.members)
		slices.SortStableFunc(byLoad, func(a, b string) int { return cmp.Compare(out[b].count(), out[a].count()) })
		moved := false
		for _, from := range byLoad {
			for _, id := range out[from].topicIDs() {
				ps := out[from][id]
				to := leastLoaded(id, from, out[from].count()-1)
				if to == "" {
					continue
				}
				p := ps[len(ps)-1]
				out[from].remove(id, p)
				out[to].add(id, p)
				moved = true
				break
			}
			if moved {
				break
			}
		}
		if !moved {
			break
		}
	}
	return out
}

// assignRange gives, per topic, the members subscribed to it (by member
// id) contiguous ranges of partitions, the first members one more when
// the count does not divide.
func assignRange(in assignorInput) map[string]assignment {
	out := make(map[string]assignment, len(in.members))
	for _, m := range in.members {
		out[m] = assignment{}
	}
	ids := assignment{}
	for id := range in.partitions {
		ids[id] = nil
	}
	for _, id := range ids.topicIDs() {
		var subs []string
		for _, m := range in.members {
			if in.subscribed[m][id] {
				subs = append(subs, m)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := int(in.partitions[id])
		per, extra := n/len(subs), n%len(subs)
		next := 0
		for i, m := range subs {
			k := per
			if i < extra {
				k++
			}
			for p := next; p < next+k; p++ {
				out[m].add(id, int32(p))
			}
			next += k
		}
	}
	return out
}

var assignors = map[string]func(assignorInput) map[string]assignment{
	AssignorUniform: assignUniform,
	AssignorRange:   assignRange,
}
