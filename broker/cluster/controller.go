package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// resignTimeout bounds the Resign of a controller stepping down.
const resignTimeout = 5 * time.Second

// campaign stands for controller on s until ctx or s ends, serving as
// controller whenever elected.
func (m *Member) campaign(ctx context.Context, s coord.Session) error {
	for {
		l, err := coord.Elect(ctx, s, controllerPath, encodeController(m.cfg.BrokerID, m.cfg.now()))
		if err != nil {
			return err
		}
		err = m.lead(ctx, s, l)
		if ctx.Err() != nil {
			// Closing (the session close removes /controller) or crashing
			// (which must leave it to the session expiry): no resign.
			return ctx.Err()
		}
		if sessionEnded(err) {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, resignTimeout)
		_ = l.Resign(rctx)
		cancel()
		m.log.Warn("cluster: controller stepped down", "err", err)
		// A fenced controller pauses so that another candidate can win.
		select {
		case <-time.After(m.cfg.retryBackoff()):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// controller is the state of one term of office.
type controller struct {
	m            *Member
	s            coord.Session
	epoch        int32
	epochVersion int32 // /controller_epoch's version after our increment: the fence
	// expected holds the state node versions our writes produced until the
	// metadata cache shows them, so that a snapshot older than our own
	// writes is not acted on again.
	expected map[string]int32
	// deleted holds topics whose deletion we committed until the cache
	// stops listing their deletion marker.
	deleted map[string]bool
	// topicIDs is reconcileTopicNodes' state (topicid.go).
	topicIDs *topicIDKeeper
}

// lead serves as controller until leadership is lost (nil), the epoch is
// fenced (errStaleController), or ctx or s ends.
func (m *Member) lead(ctx context.Context, s coord.Session, l *coord.Leadership) error {
	c := &controller{m: m, s: s, expected: map[string]int32{}, deleted: map[string]bool{}}
	if err := c.takeOffice(ctx, l); err != nil {
		return err
	}
	m.controller.Store(true)
	defer m.controller.Store(false)
	m.log.Info("cluster: elected controller", "epoch", c.epoch)
	var retry <-chan time.Time
	for {
		changed := m.Changes()
		if snap := m.Metadata(); snap.session == s.ID() {
			err := c.reconcile(ctx, snap)
			switch {
			case err == nil:
			case errors.Is(err, errStaleController), sessionEnded(err), ctx.Err() != nil:
				return err
			default:
				m.log.Info("cluster: controller write failed; retrying", "err", err)
				if retry == nil {
					retry = time.After(m.cfg.retryBackoff())
				}
			}
		}
		select {
		case <-changed:
		case <-retry:
			retry = nil
		case <-l.Lost():
			m.log.Warn("cluster: controller leadership lost", "epoch", c.epoch)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// takeOffice increments /controller_epoch by compare-and-set; the version
// it leaves fences every later write of this term.
func (c *controller) takeOffice(ctx context.Context, l *coord.Leadership) error {
	for {
		select {
		case <-l.Lost():
			return errors.New("cluster: leadership lost before taking office")
		default:
		}
		data, st, err := c.s.Get(ctx, controllerEpochPath)
		if errors.Is(err, coord.ErrNoNode) {
			_, err = c.s.Create(ctx, controllerEpochPath, []byte("1"), coord.Persistent)
			if err == nil {
				c.epoch, c.epochVersion = 1, 0
				return nil
			}
			if errors.Is(err, coord.ErrNodeExists) {
				continue
			}
			return fmt.Errorf("cluster: creating %s: %w", controllerEpochPath, err)
		}
		if err != nil {
			return fmt.Errorf("cluster: reading %s: %w", controllerEpochPath, err)
		}
		epoch, err := decodeEpoch(data)
		if err != nil {
			c.m.log.Warn("cluster: overwriting malformed controller epoch", "err", err)
			epoch = 0
		}
		st, err = c.s.Set(ctx, controllerEpochPath, []byte(strconv.Itoa(int(epoch+1))), st.Version)
		if errors.Is(err, coord.ErrBadVersion) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cluster: incrementing %s: %w", controllerEpochPath, err)
		}
		c.epoch, c.epochVersion = epoch+1, st.Version
		return nil
	}
}

func (c *controller) fence() coord.Op {
	return coord.Op{Kind: coord.OpCheck, Path: controllerEpochPath, Version: c.epochVersion}
}

// failed classifies a failed write: errStaleController when the epoch
// moved on, else err (a race with a pending watch event, or a lost
// connection), which the caller retries.
func (c *controller) failed(ctx context.Context, what string, err error) error {
	if sessionEnded(err) {
		return err
	}
	_, st, gerr := c.s.Get(ctx, controllerEpochPath)
	if gerr == nil && st.Version != c.epochVersion {
		return fmt.Errorf("%w (epoch %d): %s: %w", errStaleController, c.epoch, what, err)
	}
	return fmt.Errorf("cluster: controller: %s: %w", what, err)
}

// reconcile brings the partition states in line with the assignments and
// the live brokers, and carries out pending topic deletions.
func (c *controller) reconcile(ctx context.Context, snap Snapshot) error {
	var errs []error
	for _, t := range snap.deleting {
		if c.deleted[t] {
			continue
		}
		if err := c.deleteTopic(ctx, t); err != nil {
			if errors.Is(err, errStaleController) || sessionEnded(err) {
				return err
			}
			errs = append(errs, err)
			continue
		}
		c.deleted[t] = true
	}
	for t := range c.deleted {
		if !slices.Contains(snap.deleting, t) {
			delete(c.deleted, t)
		}
	}
	errs = append(errs, c.reconcileTopicNodes(ctx, snap))
	live := make(map[int32]bool, len(snap.Brokers))
	for _, b := range snap.Brokers {
		live[b.ID] = true
	}
	for _, name := range snap.TopicNames() {
		t := snap.Topics[name]
		if t.Deleting {
			continue
		}
		if err := c.electLeaders(ctx, t, live); err != nil {
			if errors.Is(err, errStaleController) || sessionEnded(err) {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// electLeaders writes, in one fenced multi-op, the state of every
// partition of t whose leader must change: the first live replica of the
// assignment, or -1 when none is live.
func (c *controller) electLeaders(ctx context.Context, t Topic, live map[int32]bool) error {
	ops := []coord.Op{c.fence()}
	produced := map[string]int32{}
	parentChecked := false
	for _, p := range t.Partitions {
		path := statePath(t.Name, p.ID)
		if want, ok := c.expected[path]; ok {
			if p.stateVersion < want {
				return nil // the cache has not seen our last write yet; its event will come
			}
			delete(c.expected, path)
		}
		leader := int32(-1)
		for _, r := range p.Replicas {
			if live[r] {
				leader = r
				break
			}
		}
		isr := p.ISR // no live replica: Kafka keeps the last ISR
		if leader >= 0 {
			isr = []int32{leader} // RF > 1 has no replication yet: only the leader is in sync
		}
		if p.stateVersion >= 0 && p.Leader == leader && slices.Equal(p.ISR, isr) {
			continue
		}
		rec := stateRecord{ControllerEpoch: c.epoch, Leader: leader, LeaderEpoch: 0, ISR: isr}
		if p.stateVersion >= 0 {
			rec.LeaderEpoch = p.LeaderEpoch + 1
			ops = append(ops, coord.Op{Kind: coord.OpSet, Path: path, Data: encodeState(rec), Version: p.stateVersion})
			produced[path] = p.stateVersion + 1
			continue
		}
		if !parentChecked {
			parentChecked = true
			ok, _, err := c.s.Exists(ctx, partitionsPath(t.Name))
			if err != nil {
				return c.failed(ctx, "checking "+partitionsPath(t.Name), err)
			}
			if !ok {
				ops = append(ops, coord.Op{Kind: coord.OpCreate, Path: partitionsPath(t.Name), Mode: coord.Persistent})
			}
		}
		ok, _, err := c.s.Exists(ctx, partitionPath(t.Name, p.ID))
		if err != nil {
			return c.failed(ctx, "checking "+partitionPath(t.Name, p.ID), err)
		}
		if !ok {
			ops = append(ops, coord.Op{Kind: coord.OpCreate, Path: partitionPath(t.Name, p.ID), Mode: coord.Persistent})
		}
		ops = append(ops, coord.Op{Kind: coord.OpCreate, Path: path, Data: encodeState(rec), Mode: coord.Persistent})
		produced[path] = 0
	}
	if len(produced) == 0 {
		return nil
	}
	if err := c.s.Multi(ctx, ops...); err != nil {
		return c.failed(ctx, "electing leaders of "+t.Name, err)
	}
	for p, v := range produced {
		c.expected[p] = v
	}
	c.m.log.Info("cluster: partition leadership written", "topic", t.Name, "partitions", len(produced), "epoch", c.epoch)
	return nil
}

// deleteTopic removes a topic's assignment, states, config and deletion
// marker in one fenced multi-op.
func (c *controller) deleteTopic(ctx context.Context, topic string) error {
	ops := []coord.Op{c.fence()}
	tree, err := deleteTreeOps(ctx, c.s, topicPath(topic))
	if err != nil {
		return c.failed(ctx, "listing "+topicPath(topic), err)
	}
	ops = append(ops, tree...)
	ok, _, err := c.s.Exists(ctx, topicConfigPath(topic))
	if err != nil {
		return c.failed(ctx, "checking "+topicConfigPath(topic), err)
	}
	if ok {
		ops = append(ops, coord.Op{Kind: coord.OpDelete, Path: topicConfigPath(topic), Version: coord.AnyVersion})
	}
	ops = append(ops, coord.Op{Kind: coord.OpDelete, Path: deleteTopicPath(topic), Version: coord.AnyVersion})
	if err := c.s.Multi(ctx, ops...); err != nil {
		return c.failed(ctx, "deleting topic "+topic, err)
	}
	c.m.log.Info("cluster: topic deleted", "topic", topic, "epoch", c.epoch)
	return nil
}

// deleteTreeOps lists the subtree at path and returns delete ops for it,
// children before parents; none when path does not exist.
func deleteTreeOps(ctx context.Context, s coord.Session, path string) ([]coord.Op, error) {
	names, _, err := s.Children(ctx, path)
	if errors.Is(err, coord.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ops []coord.Op
	for _, n := range names {
		sub, err := deleteTreeOps(ctx, s, coord.Join(path, n))
		if err != nil {
			return nil, err
		}
		ops = append(ops, sub...)
	}
	return append(ops, coord.Op{Kind: coord.OpDelete, Path: path, Version: coord.AnyVersion}), nil
}
