package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ExpireOffsets deletes expired offsets, as Kafka >= 2.1 does (KIP-211),
// with tombstones in the offsets topic (which the log cleaner then
// compacts away) and in the registry: of a group that is Empty and had
// members, every offset once OffsetsRetention has passed since it became
// empty; of a group that never had members here (a standalone consumer's
// manual commits, or a group not rejoined since this coordinator loaded
// it), each offset OffsetsRetention after its commit, or after the load
// if that is later. Offsets of groups with members never expire, nor an
// offset an open transaction commits over. A group
// left without offsets is removed. It returns the number of offsets
// deleted; the broker calls it every OffsetsRetentionCheck.
func (c *Coordinator) ExpireOffsets() int {
	n := 0
	for _, g := range c.allGroups() {
		n += c.expireGroup(g.part, g)
	}
	return n
}

// expireGroup deletes g's expired offsets and reports how many.
func (c *Coordinator) expireGroup(ps *offsetsPartition, g *group) int {
	ps.writeMu.Lock()
	defer ps.writeMu.Unlock()
	g.mu.Lock()
	if g.hasMembers() {
		g.mu.Unlock()
		return 0
	}
	now := c.cfg.Now().UnixMilli()
	retention := c.cfg.OffsetsRetention.Milliseconds()
	var records []Record
	var gone []TopicPartition
	for _, t := range sortedKeys(g.offsets) {
		for _, p := range sortedKeys(g.offsets[t]) {
			since := max(g.offsets[t][p].CommitTime, ps.loadedAt)
			if g.protocolType != "" || g.cg != nil {
				since = g.emptySince
			}
			// An offset an open transaction commits over is kept until
			// its marker, as Kafka's coordinator keeps it.
			if since+retention <= now && !g.hasPendingTxn(TopicPartition{t, p}) {
				records = append(records, offsetTombstone(g.id, t, p))
				gone = append(gone, TopicPartition{t, p})
			}
		}
	}
	if len(records) == 0 {
		g.mu.Unlock()
		return 0
	}
	// g.mu stays held across the append, as in deleteGroup: no member
	// joins or commits meanwhile.
	if err := ps.log.Append(records); err != nil {
		g.mu.Unlock()
		c.appendCode(err)
		return 0
	}
	ps.nextPos()
	for _, tp := range gone {
		g.deleteOffset(tp.Topic, tp.Partition)
	}
	removed := len(g.offsets) == 0 && len(g.pendingTxn) == 0 // kept while a transaction commits offsets
	if removed {
		g.unload()
		g.deadCode = kerr.CoordinatorNotAvailable.Code // the client finds a fresh group
	}
	g.mu.Unlock()
	if removed {
		c.forget(ps, g)
		gone = nil // the group's whole registry node
	}
	c.registryRemove(g.id, gone)
	c.cfg.Logger.Info("expired offsets", "group", g.id, "offsets", len(records), "group_removed", removed,
		"retention", time.Duration(retention)*time.Millisecond)
	return len(records)
}
