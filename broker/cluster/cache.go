package cluster

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// Watch keys name what a cached entry mirrors: a node's data (nodeKind,
// through ExistsW, which fires on create, change and delete) or a node's
// children (childKind, through ChildrenW).
const (
	nodeKind  = "n"
	childKind = "c"
)

type nodeValue struct {
	data    []byte
	version int32
}

// treeCache mirrors the parts of the Kafka layout that metadata is built
// from, kept fresh by one-shot watches that it re-arms as they fire. It is
// owned by one goroutine (run) for the life of one session.
//
// Invariant: an entry of nodes or kids was read no earlier than the moment
// its key's watch was last armed, so while a key is armed its entry is
// current up to a pending event. Entries are therefore never dropped while
// armed, even when the topic they belong to goes away: a watch cannot be
// removed, and the entry is right for a topic re-created under that name.
type treeCache struct {
	s       coord.Session
	log     *slog.Logger
	backoff time.Duration

	nodes  map[string]nodeValue // existing nodes; absent = missing
	kids   map[string][]string
	armed  map[string]bool
	queue  []string
	queued map[string]bool
	retry  map[string]bool
	fired  chan string
	warned map[string]int32 // path -> version already reported malformed
}

func newTreeCache(s coord.Session, log *slog.Logger, backoff time.Duration) *treeCache {
	return &treeCache{
		s: s, log: log, backoff: backoff,
		nodes: map[string]nodeValue{}, kids: map[string][]string{},
		armed: map[string]bool{}, queued: map[string]bool{}, retry: map[string]bool{},
		fired: make(chan string, 64), warned: map[string]int32{},
	}
}

// run loads the tree, publishes a snapshot after every batch of changes and
// returns when ctx ends or the session does (an error wrapping
// coord.ErrSessionExpired or coord.ErrClosed).
func (c *treeCache) run(ctx context.Context, publish func(Snapshot)) error {
	for _, p := range persistentRoots {
		c.need(childKind + p)
	}
	c.need(childKind + shuttingDownPath)
	c.need(nodeKind + controllerPath)
	c.need(nodeKind + controllerEpochPath)
	c.need(nodeKind + reassignPartitionsPath)
	var retry <-chan time.Time
	for {
		if err := c.drain(ctx); err != nil {
			return err
		}
		publish(c.snapshot())
		if len(c.retry) > 0 && retry == nil {
			retry = time.After(c.backoff)
		}
		select {
		case k := <-c.fired:
			c.refired(k)
			// Coalesce a burst (a topic creation fires several watches)
			// into one snapshot.
			for more := true; more; {
				select {
				case k := <-c.fired:
					c.refired(k)
				default:
					more = false
				}
			}
		case <-retry:
			retry = nil
			for k := range c.retry {
				c.need(k)
			}
			clear(c.retry)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *treeCache) refired(k string) {
	c.armed[k] = false
	c.need(k)
}

func (c *treeCache) need(k string) {
	if c.armed[k] || c.queued[k] {
		return
	}
	c.queued[k] = true
	c.queue = append(c.queue, k)
}

func (c *treeCache) drain(ctx context.Context) error {
	for len(c.queue) > 0 {
		k := c.queue[0]
		c.queue = c.queue[1:]
		delete(c.queued, k)
		if c.armed[k] {
			continue
		}
		if err := c.refresh(ctx, k); err != nil {
			if sessionEnded(err) || ctx.Err() != nil {
				return err
			}
			c.log.Debug("cluster: metadata read failed; retrying", "key", k, "err", err)
			c.retry[k] = true
		}
	}
	return nil
}

// track forwards ch's one event to the run loop. The goroutine ends with
// the event or with ctx (the session's lifetime).
func (c *treeCache) track(ctx context.Context, k string, ch <-chan coord.Event) {
	c.armed[k] = true
	go func() {
		select {
		case <-ch:
			select {
			case c.fired <- k:
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
	}()
}

func (c *treeCache) refresh(ctx context.Context, k string) error {
	kind, path := k[:1], k[1:]
	if kind == childKind {
		names, _, ch, err := c.s.ChildrenW(ctx, path)
		if errors.Is(err, coord.ErrNoNode) {
			// Someone removed a root; poll until it is back.
			delete(c.kids, path)
			c.retry[k] = true
			return nil
		}
		if err != nil {
			return err
		}
		c.track(ctx, k, ch)
		c.kids[path] = names
		if path != deleteTopicsPath && path != shuttingDownPath { // names are all that matters
			for _, n := range names {
				c.need(nodeKind + coord.Join(path, n))
			}
		}
		return nil
	}
	ok, _, ch, err := c.s.ExistsW(ctx, path)
	if err != nil {
		return err
	}
	c.track(ctx, k, ch)
	if !ok {
		delete(c.nodes, path)
		return nil
	}
	data, st, err := c.s.Get(ctx, path)
	if errors.Is(err, coord.ErrNoNode) {
		delete(c.nodes, path) // the armed watch reports the deletion
		return nil
	}
	if err != nil {
		return err
	}
	c.nodes[path] = nodeValue{data: data, version: st.Version}
	if coord.Parent(path) == topicsPath {
		topic := coord.Base(path)
		if replicas, _, err := decodeAssignment(topic, data); err == nil {
			for p := range replicas {
				c.need(nodeKind + statePath(topic, int32(p)))
			}
		}
		return c.topicConfig(ctx, topic)
	}
	return nil
}

// topicConfig makes sure a topic's config node is read in the same batch
// as its assignment (they are written in one multi-op), so that no
// snapshot shows a new topic without its configs. An armed watch on a node
// that was missing may not have fired yet: then the node is read without
// re-arming, which keeps the invariant (the watch was armed earlier).
func (c *treeCache) topicConfig(ctx context.Context, topic string) error {
	path := topicConfigPath(topic)
	if _, cached := c.nodes[path]; cached {
		return nil
	}
	if !c.armed[nodeKind+path] {
		c.need(nodeKind + path)
		return nil
	}
	data, st, err := c.s.Get(ctx, path)
	switch {
	case errors.Is(err, coord.ErrNoNode):
		return nil
	case err != nil:
		return err
	}
	c.nodes[path] = nodeValue{data: data, version: st.Version}
	return nil
}

// warn reports malformed data once per node version.
func (c *treeCache) warn(path string, version int32, err error) {
	if v, ok := c.warned[path]; ok && v == version {
		return
	}
	c.warned[path] = version
	c.log.Warn("cluster: ignoring malformed node", "path", path, "err", err)
}

func (c *treeCache) snapshot() Snapshot {
	snap := Snapshot{Controller: -1, session: c.s.ID(), Topics: map[string]Topic{}}
	for _, name := range c.kids[brokerIDsPath] {
		path := coord.Join(brokerIDsPath, name)
		v, ok := c.nodes[path]
		if !ok {
			continue
		}
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil || id < 0 {
			continue // not a broker registration
		}
		b, err := decodeBroker(int32(id), v.data)
		if err != nil {
			c.warn(path, v.version, err)
			continue
		}
		snap.Brokers = append(snap.Brokers, b)
	}
	slices.SortFunc(snap.Brokers, func(a, b Broker) int { return int(a.ID) - int(b.ID) })
	if v, ok := c.nodes[controllerPath]; ok {
		if id, err := decodeController(v.data); err == nil {
			snap.Controller = id
		} else {
			c.warn(controllerPath, v.version, err)
		}
	}
	if v, ok := c.nodes[controllerEpochPath]; ok {
		if e, err := decodeEpoch(v.data); err == nil {
			snap.ControllerEpoch = e
		} else {
			c.warn(controllerEpochPath, v.version, err)
		}
	}
	for _, id := range brokerIDs(c.kids[shuttingDownPath]) {
		if _, live := snap.Broker(id); live {
			snap.ShuttingDown = append(snap.ShuttingDown, id)
		}
	}
	snap.deleting = slices.Clone(c.kids[deleteTopicsPath])
	for _, entity := range c.kids[brokerConfigsPath] {
		path := brokerConfigPath(entity)
		v, ok := c.nodes[path]
		if !ok {
			continue
		}
		cfg, err := decodeConfig("brokers/"+entity, v.data)
		if err != nil {
			c.warn(path, v.version, err)
			continue
		}
		if snap.BrokerConfigs == nil {
			snap.BrokerConfigs = map[string]map[string]string{}
		}
		snap.BrokerConfigs[entity] = cfg
	}
	if v, ok := c.nodes[reassignPartitionsPath]; ok {
		snap.zkReassign = &v
	}
	for _, name := range c.kids[topicsPath] {
		path := topicPath(name)
		v, ok := c.nodes[path]
		if !ok {
			continue
		}
		replicas, id, err := decodeAssignment(name, v.data)
		if err != nil {
			c.warn(path, v.version, err)
			continue
		}
		t := Topic{Name: name, ID: id, Partitions: make([]Partition, len(replicas)), version: v.version}
		_, t.Deleting = slices.BinarySearch(snap.deleting, name)
		rec, _ := decodeTopic(name, v.data) // decodeAssignment parsed it
		for p, rs := range replicas {
			t.Partitions[p] = c.partition(name, int32(p), rs)
			key := strconv.Itoa(p)
			t.Partitions[p].AddingReplicas, t.Partitions[p].RemovingReplicas = rec.AddingReplicas[key], rec.RemovingReplicas[key]
		}
		if cv, ok := c.nodes[topicConfigPath(name)]; ok {
			if cfg, err := decodeConfig(name, cv.data); err == nil {
				// A topic not migrated yet keeps its id in the config
				// node; it is an id, not a config, to every reader.
				if legacy, ok := cfg[LegacyTopicIDConfig]; ok {
					delete(cfg, LegacyTopicIDConfig)
					if t.ID == "" && legacy != zeroTopicID && ValidTopicID(legacy) {
						t.ID = legacy
					}
				}
				t.Configs = cfg
			} else {
				c.warn(topicConfigPath(name), cv.version, err)
			}
		}
		snap.Topics[name] = t
	}
	snap.markOffline()
	return snap
}

func (c *treeCache) partition(topic string, p int32, replicas []int32) Partition {
	part := Partition{ID: p, Leader: -1, LeaderEpoch: -1, Replicas: replicas, stateVersion: -1}
	path := statePath(topic, p)
	v, ok := c.nodes[path]
	if !ok {
		return part
	}
	st, err := decodeState(v.data)
	if err != nil {
		c.warn(path, v.version, err)
		// The controller overwrites it: the version lets its CAS succeed.
		part.stateVersion = v.version
		return part
	}
	part.Leader, part.LeaderEpoch, part.ISR, part.stateVersion = st.Leader, st.LeaderEpoch, st.ISR, v.version
	return part
}

func sessionEnded(err error) bool {
	return errors.Is(err, coord.ErrSessionExpired) || errors.Is(err, coord.ErrClosed)
}

// brokerIDs parses the names under /brokers/ids, sorted; names that are not
// broker ids are skipped.
func brokerIDs(names []string) []int32 {
	ids := make([]int32, 0, len(names))
	for _, n := range names {
		if strings.TrimLeft(n, "0123456789") != "" || n == "" {
			continue
		}
		if id, err := strconv.ParseInt(n, 10, 32); err == nil {
			ids = append(ids, int32(id))
		}
	}
	slices.Sort(ids)
	return ids
}
