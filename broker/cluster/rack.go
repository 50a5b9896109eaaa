package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tributary/tributary/internal/coord"
)

// assignLive assigns replicas over the registered brokers ids, reading
// their racks: rack-aware when every one of them has a rack (Kafka's
// "safe" rack-aware mode, the one its auto topic creation uses), else the
// plain assignment. A broker whose registration went away meanwhile is
// left out.
func assignLive(ctx context.Context, s coord.Session, ids []int32, partitions int32, replicationFactor int16) ([][]int32, error) {
	racks := make(map[int32]string, len(ids))
	live := make([]int32, 0, len(ids))
	for _, id := range ids {
		data, _, err := s.Get(ctx, brokerPath(id))
		if errors.Is(err, coord.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading broker %d: %w", id, err)
		}
		live = append(live, id)
		if b, err := decodeBroker(id, data); err == nil && b.Rack != "" {
			racks[id] = b.Rack
		}
	}
	return assignReplicasByRack(live, racks, partitions, replicationFactor)
}

// assignReplicasByRack is Kafka's AdminUtils.assignReplicasToBrokersRackAware
// with a fixed start (the first broker of the rack-alternated list, no
// shift) when every broker has a rack and there is more than one replica;
// else assignReplicas. At one replica there is nothing to spread over
// racks, and the plain assignment keeps partition p's leader on the p-th
// broker by id.
//
// The brokers are ordered by alternating the racks (sorted by name): the
// lowest id of each rack, then the second lowest of each, and so on. The
// first replica of partition p is broker p of that list (mod its length),
// so leaders spread evenly over brokers and racks. Each further replica is
// taken walking the list from the first replica with a shift that grows
// each time the partitions wrap around it, skipping brokers that already
// hold a replica and, while some rack holds none, brokers of racks that
// do: with at least as many racks as replicas, every replica is on its own
// rack.
func assignReplicasByRack(brokers []int32, racks map[int32]string, partitions int32, replicationFactor int16) ([][]int32, error) {
	if replicationFactor <= 1 || len(brokers) == 0 ||
		slices.ContainsFunc(brokers, func(id int32) bool { return racks[id] == "" }) {
		return assignReplicas(brokers, partitions, replicationFactor)
	}
	if err := checkFactor(int32(len(brokers)), partitions, replicationFactor); err != nil {
		return nil, err
	}
	list := rackAlternated(brokers, racks)
	n := int32(len(list))
	numRacks := len(distinctRacks(brokers, racks))
	rf := int(replicationFactor)
	out := make([][]int32, partitions)
	shift := int32(0)
	for p := range partitions {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := p % n
		leader := list[first]
		replicas := make([]int32, 1, rf)
		replicas[0] = leader
		rackUsed := map[string]bool{racks[leader]: true}
		for k := int32(0); len(replicas) < rf; k++ {
			b := list[(first+1+(shift*int32(numRacks)+k)%(n-1))%n]
			r := racks[b]
			if slices.Contains(replicas, b) || (rackUsed[r] && len(rackUsed) < numRacks) {
				continue
			}
			replicas = append(replicas, b)
			rackUsed[r] = true
		}
		out[p] = replicas
	}
	return out, nil
}

// rackAlternated orders brokers by alternating racks: racks sorted by
// name, each rack's brokers by id, one broker of each rack in turn.
func rackAlternated(brokers []int32, racks map[int32]string) []int32 {
	byRack := map[string][]int32{}
	for _, id := range brokers {
		byRack[racks[id]] = append(byRack[racks[id]], id)
	}
	names := distinctRacks(brokers, racks)
	for _, ids := range byRack {
		slices.Sort(ids)
	}
	out := make([]int32, 0, len(brokers))
	for i := 0; len(out) < len(brokers); i++ {
		for _, name := range names {
			if ids := byRack[name]; i < len(ids) {
				out = append(out, ids[i])
			}
		}
	}
	return out
}

func distinctRacks(brokers []int32, racks map[int32]string) []string {
	names := make([]string, 0, len(brokers))
	for _, id := range brokers {
		names = append(names, racks[id])
	}
	slices.Sort(names)
	return slices.Compact(names)
}
