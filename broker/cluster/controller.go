package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	// nextRebalance is the earliest time of the next preferred-leader
	// move; imbalanced is set by reconcile when a move waits for it.
	nextRebalance time.Time
	imbalanced    bool
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
	var retry, rebalance <-chan time.Time
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
		if c.imbalanced && rebalance == nil {
			rebalance = time.After(time.Until(c.nextRebalance))
		}
		select {
		case <-changed:
		case <-retry:
			retry = nil
		case <-rebalance:
			rebalance = nil
		case req := <-m.elections:
			req.reply <- c.adminElections(ctx, req)
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

// maxStateConflicts bounds the re-read-and-redo rounds of one topic's
// state write within one reconcile; past it the reconcile is retried after
// the backoff (leaders rewriting ISRs that often are not expected).
const maxStateConflicts = 5

// reconcile brings the partition states in line with the assignments, the
// live and shutting-down brokers and the ISRs, and carries out pending
// topic deletions.
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
	brokers := newBrokerStates(snap)
	now := time.Now()
	preferred := c.m.cfg.AutoLeaderRebalance && !now.Before(c.nextRebalance)
	moved := false
	c.imbalanced = false
	for _, name := range snap.TopicNames() {
		t := snap.Topics[name]
		if t.Deleting {
			continue
		}
		res, err := c.electLeaders(ctx, t, brokers, preferred)
		moved = moved || res.moved
		c.imbalanced = c.imbalanced || res.imbalanced
		if err == nil {
			err = c.completeReassignments(ctx, t, brokers)
		}
		if err != nil {
			if errors.Is(err, errStaleController) || sessionEnded(err) {
				return err
			}
			errs = append(errs, err)
		}
	}
	if moved {
		// Preferred-leader moves happen at most once per interval: a
		// broker that flaps does not drag leadership back and forth.
		c.nextRebalance = now.Add(c.m.cfg.leaderImbalanceCheckInterval())
	}
	return errors.Join(errs...)
}

// electResult tells reconcile about preferred-leader moves.
type electResult struct {
	moved      bool // a preferred-leader move was written
	imbalanced bool // a preferred-leader move waits for the next check
}

// electLeaders writes, in one fenced multi-op, the state of every
// partition of t that must change (see elect). Each write is conditional
// on the state node's version, since the partition's leader writes ISR
// changes too: on a conflict the states are read again and the decisions
// redone on top of the leader's change.
func (c *controller) electLeaders(ctx context.Context, t Topic, brokers brokerStates, preferred bool) (electResult, error) {
	unclean := uncleanElection(t, c.m.cfg.UncleanLeaderElection)
	parts := t.Partitions
	for conflicts := 0; ; conflicts++ {
		ops, produced, res, err := c.stateOps(ctx, t.Name, parts, brokers, unclean, preferred)
		if err != nil || len(produced) == 0 {
			return electResult{imbalanced: res.imbalanced}, err
		}
		err = c.s.Multi(ctx, ops...)
		if err == nil {
			for p, v := range produced {
				c.expected[p] = v
			}
			c.m.log.Info("cluster: partition states written", "topic", t.Name, "partitions", len(produced),
				"epoch", c.epoch, "preferred_moves", res.moved)
			return res, nil
		}
		err = c.failed(ctx, "electing leaders of "+t.Name, err)
		conflict := errors.Is(err, coord.ErrBadVersion) || errors.Is(err, coord.ErrNodeExists)
		if !conflict || errors.Is(err, errStaleController) || conflicts >= maxStateConflicts {
			return electResult{imbalanced: res.imbalanced}, err
		}
		c.m.log.Info("cluster: partition state changed under the controller; reading it again", "topic", t.Name, "err", err)
		if parts, err = c.readStates(ctx, t.Name, parts); err != nil {
			return electResult{}, c.failed(ctx, "reading the states of "+t.Name, err)
		}
	}
}

// stateOps builds the fenced multi-op for the partitions of topic whose
// state must change and the state node versions it will produce; none
// while the cache has not yet shown one of our earlier writes.
func (c *controller) stateOps(ctx context.Context, topic string, parts []Partition, brokers brokerStates, unclean, preferred bool) ([]coord.Op, map[string]int32, electResult, error) {
	ops := []coord.Op{c.fence()}
	produced := map[string]int32{}
	var res electResult
	parentChecked := false
	for _, p := range parts {
		path := statePath(topic, p.ID)
		if want, ok := c.expected[path]; ok {
			if p.stateVersion < want {
				return nil, nil, res, nil // the cache has not seen our last write yet; its event will come
			}
			delete(c.expected, path)
		}
		move := preferredMove(p, brokers)
		if move && !preferred {
			res.imbalanced = true
		}
		leader, isr := elect(p, brokers, unclean, preferred)
		if p.stateVersion >= 0 && p.Leader == leader && slices.Equal(p.ISR, isr) {
			continue
		}
		res.moved = res.moved || (move && preferred)
		rec := stateRecord{ControllerEpoch: c.epoch, Leader: leader, LeaderEpoch: 0, ISR: isr}
		if p.stateVersion >= 0 {
			// Every controller write bumps the epoch, so that a leader's ISR
			// write based on the older state fails its compare-and-set.
			rec.LeaderEpoch = p.LeaderEpoch + 1
			ops = append(ops, coord.Op{Kind: coord.OpSet, Path: path, Data: encodeState(rec), Version: p.stateVersion})
			produced[path] = p.stateVersion + 1
			continue
		}
		if !parentChecked {
			parentChecked = true
			ok, _, err := c.s.Exists(ctx, partitionsPath(topic))
			if err != nil {
				return nil, nil, res, c.failed(ctx, "checking "+partitionsPath(topic), err)
			}
			if !ok {
				ops = append(ops, coord.Op{Kind: coord.OpCreate, Path: partitionsPath(topic), Mode: coord.Persistent})
			}
		}
		ok, _, err := c.s.Exists(ctx, partitionPath(topic, p.ID))
		if err != nil {
			return nil, nil, res, c.failed(ctx, "checking "+partitionPath(topic, p.ID), err)
		}
		if !ok {
			ops = append(ops, coord.Op{Kind: coord.OpCreate, Path: partitionPath(topic, p.ID), Mode: coord.Persistent})
		}
		ops = append(ops, coord.Op{Kind: coord.OpCreate, Path: path, Data: encodeState(rec), Mode: coord.Persistent})
		produced[path] = 0
	}
	return ops, produced, res, nil
}

// readStates returns parts with their states read from the coordination
// service instead of the cache.
func (c *controller) readStates(ctx context.Context, topic string, parts []Partition) ([]Partition, error) {
	out := make([]Partition, len(parts))
	for i, p := range parts {
		p.Leader, p.LeaderEpoch, p.ISR, p.stateVersion = -1, -1, nil, -1
		data, st, err := c.s.Get(ctx, statePath(topic, p.ID))
		switch {
		case errors.Is(err, coord.ErrNoNode):
		case err != nil:
			return nil, err
		default:
			p.stateVersion = st.Version
			if rec, err := decodeState(data); err == nil {
				p.Leader, p.LeaderEpoch, p.ISR = rec.Leader, rec.LeaderEpoch, rec.ISR
			}
		}
		out[i] = p
	}
	return out, nil
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
	// The state nodes are gone: a topic re-created under this name starts
	// without them, which must not read as "our last write not seen yet".
	prefix := partitionsPath(topic) + "/"
	for path := range c.expected {
		if strings.HasPrefix(path, prefix) {
			delete(c.expected, path)
		}
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
