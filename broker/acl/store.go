package acl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tributary/tributary/internal/coord"
)

// Layout in the coordination service (frozen: Kafka 2.8's AclAuthorizer,
// so that kafka-acls --authorizer-properties zookeeper.connect=... and our
// brokers read and write the same nodes).
const (
	literalRoot     = "/kafka-acl"
	extendedRoot    = "/kafka-acl-extended"
	prefixedRoot    = extendedRoot + "/prefixed"
	literalChanges  = "/kafka-acl-changes"
	extendedChanges = "/kafka-acl-extended-changes"
	changePrefix    = "acl_changes_"
	// aclVersion and changeVersion are the "version" of an ACL node and
	// of an extended change notification.
	aclVersion    = 1
	changeVersion = 1
)

// casAttempts bounds the compare-and-set retries of one pattern's update.
const casAttempts = 10

// aclNode is the JSON of one pattern's node.
type aclNode struct {
	Version int        `json:"version"`
	ACLs    []aclEntry `json:"acls"`
}

type aclEntry struct {
	Principal      string `json:"principal"`
	PermissionType string `json:"permissionType"`
	Operation      string `json:"operation"`
	Host           string `json:"host"`
}

// extendedChange is the JSON of a notification under
// /kafka-acl-extended-changes.
type extendedChange struct {
	Version      int    `json:"version"`
	ResourceType string `json:"resourceType"`
	Name         string `json:"name"`
	PatternType  string `json:"patternType"`
}

// NodePath is where a pattern's ACLs are stored.
func NodePath(p Pattern) string {
	if p.Pattern == PatternPrefixed {
		return coord.Join(prefixedRoot, p.Type.String(), p.Name)
	}
	return coord.Join(literalRoot, p.Type.String(), p.Name)
}

// encodeNode writes a node's JSON, entries in a stable order.
func encodeNode(entries []Entry) []byte {
	n := aclNode{Version: aclVersion, ACLs: make([]aclEntry, 0, len(entries))}
	for _, e := range entries {
		n.ACLs = append(n.ACLs, aclEntry{Principal: e.Principal, PermissionType: e.Permission.String(),
			Operation: e.Operation.String(), Host: e.Host})
	}
	data, _ := json.Marshal(n)
	return data
}

// decodeNode reads a node's JSON; unreadable entries fail the node, as
// they fail Kafka's broker.
func decodeNode(data []byte) ([]Entry, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var n aclNode
	if err := json.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedNode, err)
	}
	out := make([]Entry, 0, len(n.ACLs))
	for _, a := range n.ACLs {
		op, err := ParseOperation(a.Operation)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformedNode, err)
		}
		perm, err := ParsePermission(a.PermissionType)
		if err != nil || perm == PermissionAny {
			return nil, fmt.Errorf("%w: permission %q", ErrMalformedNode, a.PermissionType)
		}
		out = append(out, Entry{Principal: a.Principal, Host: a.Host, Operation: op, Permission: perm})
	}
	return out, nil
}

// encodeChange is the notification naming p: "TOPIC:name" for literal
// patterns, JSON for the others (Kafka 2.8's LiteralAclChangeStore and
// ExtendedAclChangeStore).
func encodeChange(p Pattern) (string, []byte) {
	if p.Pattern == PatternLiteral {
		return literalChanges, []byte(p.Type.enumName() + ":" + p.Name)
	}
	data, _ := json.Marshal(extendedChange{Version: changeVersion, ResourceType: p.Type.enumName(),
		Name: p.Name, PatternType: p.Pattern.String()})
	return extendedChanges, data
}

func decodeChange(root string, data []byte) (Pattern, error) {
	if root == literalChanges {
		t, name, ok := strings.Cut(string(data), ":")
		if !ok {
			return Pattern{}, fmt.Errorf("%w: change %q is not ResourceType:name", ErrMalformedNode, data)
		}
		rt, err := ParseResourceType(t)
		if err != nil {
			return Pattern{}, err
		}
		return Pattern{rt, name, PatternLiteral}, nil
	}
	var c extendedChange
	if err := json.Unmarshal(data, &c); err != nil {
		return Pattern{}, fmt.Errorf("%w: %w", ErrMalformedNode, err)
	}
	rt, err := ParseResourceType(c.ResourceType)
	if err != nil {
		return Pattern{}, err
	}
	pt, err := ParsePatternType(c.PatternType)
	if err != nil || pt != PatternPrefixed {
		return Pattern{}, fmt.Errorf("%w: pattern type %q", ErrMalformedNode, c.PatternType)
	}
	return Pattern{rt, c.Name, pt}, nil
}

// Store keeps an Authorizer's cache equal to the ACLs in the coordination
// service: loaded whole when a session starts, then kept current by the
// change notifications (and reloaded whole after a session loss); and it
// writes the bindings of CreateAcls and DeleteAcls, each followed by the
// notification every broker follows. Safe for concurrent use.
type Store struct {
	cache *Authorizer
	log   *slog.Logger

	synced     chan struct{}
	syncedOnce sync.Once

	// writeMu serializes this broker's writes, so that its own updates of
	// one pattern do not race each other (other writers are handled by
	// the compare-and-set).
	writeMu sync.Mutex
	// cacheMu orders the cache updates of the notifications and of this
	// broker's own writes: each reads the node and sets the cache under
	// it, so the last read wins.
	cacheMu sync.Mutex
	// ops is the session of the writes (CreateAcls, DeleteAcls).
	ops *coord.Redialer

	follower *coord.Follower
}

// NewStore starts a store filling cache from sessions of connect; it runs
// until Close or until ctx ends. logger may be nil.
func NewStore(ctx context.Context, connect coord.SessionFactory, cache *Authorizer, logger *slog.Logger) *Store {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{cache: cache, log: logger, synced: make(chan struct{}),
		ops: coord.NewRedialer(connect, ErrClosed)}
	s.follower = coord.StartFollower(ctx, "acl: ACL cache", connect, s.follow, logger)
	return s
}

// Synced is closed once the cache has been loaded.
func (s *Store) Synced() <-chan struct{} { return s.synced }

// Close stops the store and ends its sessions.
func (s *Store) Close() error {
	s.follower.Stop()
	return s.ops.Close()
}

// ensurePaths makes the roots Kafka's AclAuthorizer makes at start.
func ensurePaths(ctx context.Context, sess coord.Session) error {
	paths := []string{literalChanges, extendedChanges}
	for _, rt := range ResourceTypes() {
		paths = append(paths, coord.Join(literalRoot, rt.String()), coord.Join(prefixedRoot, rt.String()))
	}
	for _, p := range paths {
		if _, err := sess.CreateAll(ctx, p, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
			return fmt.Errorf("creating %s: %w", p, err)
		}
	}
	return nil
}

// follow arms the watches on both change paths, loads every ACL, and then
// re-reads each pattern a notification names. Notifications older than
// the load are covered by it.
func (s *Store) follow(ctx context.Context, sess coord.Session) error {
	if err := ensurePaths(ctx, sess); err != nil {
		return err
	}
	type feed struct {
		root  string
		last  int64
		watch <-chan coord.Event
	}
	feeds := []*feed{{root: literalChanges}, {root: extendedChanges}}
	for _, f := range feeds {
		names, _, w, err := sess.ChildrenW(ctx, f.root)
		if err != nil {
			return err
		}
		f.last, f.watch = maxChangeSeq(names, -1), w
	}
	all, err := readAll(ctx, sess, s.log)
	if err != nil {
		return err
	}
	s.cacheMu.Lock()
	s.cache.Replace(all)
	s.cacheMu.Unlock()
	s.syncedOnce.Do(func() { close(s.synced) })
	for {
		var fired *feed
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev := <-feeds[0].watch:
			fired = feeds[0]
			if ev.Type == coord.EventSessionLost {
				return coord.ErrSessionExpired
			}
		case ev := <-feeds[1].watch:
			fired = feeds[1]
			if ev.Type == coord.EventSessionLost {
				return coord.ErrSessionExpired
			}
		}
		names, _, w, err := sess.ChildrenW(ctx, fired.root)
		if err != nil {
			return err
		}
		fired.watch = w
		slices.SortFunc(names, func(a, b string) int { return int(changeSeq(a) - changeSeq(b)) })
		for _, n := range names {
			seq := changeSeq(n)
			if seq <= fired.last {
				continue
			}
			if err := s.apply(ctx, sess, fired.root, n); err != nil {
				return err
			}
			fired.last = seq
		}
	}
}

// apply re-reads the pattern a notification names.
func (s *Store) apply(ctx context.Context, sess coord.Session, root, name string) error {
	data, _, err := sess.Get(ctx, coord.Join(root, name))
	if errors.Is(err, coord.ErrNoNode) {
		return nil // purged already
	}
	if err != nil {
		return err
	}
	p, err := decodeChange(root, data)
	if err != nil {
		s.log.Warn("acl: ignoring an unreadable ACL change notification", "node", coord.Join(root, name), "err", err)
		return nil
	}
	return s.refresh(ctx, sess, p)
}

// refresh reads one pattern's node into the cache.
func (s *Store) refresh(ctx context.Context, sess coord.Session, p Pattern) error {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	entries, _, err := readPattern(ctx, sess, p)
	if errors.Is(err, ErrMalformedNode) {
		s.log.Warn("acl: unreadable ACL node; its ACLs are dropped", "node", NodePath(p), "err", err)
		entries = nil
	} else if err != nil {
		return err
	}
	s.cache.Set(p, entries)
	return nil
}

// readPattern reads one pattern's entries and node version (-1: no node).
func readPattern(ctx context.Context, sess coord.Session, p Pattern) ([]Entry, int32, error) {
	data, st, err := sess.Get(ctx, NodePath(p))
	if errors.Is(err, coord.ErrNoNode) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, 0, err
	}
	entries, err := decodeNode(data)
	return entries, st.Version, err
}

// readAll reads every pattern of both roots; a malformed node is skipped
// with a warning.
func readAll(ctx context.Context, sess coord.Session, log *slog.Logger) (map[Pattern][]Entry, error) {
	out := map[Pattern][]Entry{}
	for _, root := range []struct {
		path string
		pt   PatternType
	}{{literalRoot, PatternLiteral}, {prefixedRoot, PatternPrefixed}} {
		types, _, err := sess.Children(ctx, root.path)
		if errors.Is(err, coord.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, tn := range types {
			rt, err := ParseResourceType(tn)
			if err != nil {
				continue
			}
			names, _, err := sess.Children(ctx, coord.Join(root.path, tn))
			if err != nil && !errors.Is(err, coord.ErrNoNode) {
				return nil, err
			}
			for _, n := range names {
				p := Pattern{rt, n, root.pt}
				entries, _, err := readPattern(ctx, sess, p)
				if errors.Is(err, ErrMalformedNode) {
					log.Warn("acl: unreadable ACL node skipped", "node", NodePath(p), "err", err)
					continue
				}
				if err != nil {
					return nil, err
				}
				if len(entries) > 0 {
					out[p] = entries
				}
			}
		}
	}
	return out, nil
}

func changeSeq(name string) int64 {
	n, err := strconv.ParseInt(strings.TrimPrefix(name, changePrefix), 10, 64)
	if err != nil || !strings.HasPrefix(name, changePrefix) {
		return -1
	}
	return n
}

func maxChangeSeq(names []string, from int64) int64 {
	for _, n := range names {
		from = max(from, changeSeq(n))
	}
	return from
}

// update rewrites one pattern's node with edit's result (compare-and-set,
// deleting the node when no entry is left, as Kafka does), then writes the
// change notification. changed false from edit writes nothing.
func (s *Store) update(ctx context.Context, p Pattern, edit func([]Entry) ([]Entry, bool)) error {
	return s.ops.Do(ctx, func(sess coord.Session) error {
		if err := ensurePaths(ctx, sess); err != nil {
			return err
		}
		for range casAttempts {
			cur, version, err := readPattern(ctx, sess, p)
			if err != nil && !errors.Is(err, ErrMalformedNode) {
				return err
			}
			next, changed := edit(cur)
			if !changed {
				return nil
			}
			switch {
			case len(next) == 0 && version < 0:
				return nil
			case len(next) == 0:
				err = sess.Delete(ctx, NodePath(p), version)
			case version < 0:
				_, err = sess.Create(ctx, NodePath(p), encodeNode(next), coord.Persistent)
			default:
				_, err = sess.Set(ctx, NodePath(p), encodeNode(next), version)
			}
			if errors.Is(err, coord.ErrBadVersion) || errors.Is(err, coord.ErrNodeExists) || errors.Is(err, coord.ErrNoNode) {
				continue // another writer got there first
			}
			if err != nil {
				return err
			}
			root, data := encodeChange(p)
			if _, err = sess.Create(ctx, coord.Join(root, changePrefix), data, coord.PersistentSequential); err != nil {
				return err
			}
			// This broker's own cache shows the write at once, as
			// Kafka's does; the others follow the notification.
			return s.refresh(ctx, sess, p)
		}
		return fmt.Errorf("%w: %s", ErrConflict, NodePath(p))
	})
}

// Create stores bindings (validated first; an invalid one fails alone).
// It returns one error per binding, nil for success.
func (s *Store) Create(ctx context.Context, bindings []Binding) []error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	errs := make([]error, len(bindings))
	byPattern := map[Pattern][]int{}
	var order []Pattern
	for i, b := range bindings {
		if errs[i] = b.Validate(); errs[i] != nil {
			continue
		}
		if byPattern[b.Pattern] == nil {
			order = append(order, b.Pattern)
		}
		byPattern[b.Pattern] = append(byPattern[b.Pattern], i)
	}
	for _, p := range order {
		idx := byPattern[p]
		err := s.update(ctx, p, func(cur []Entry) ([]Entry, bool) {
			next, changed := slices.Clone(cur), false
			for _, i := range idx {
				if !slices.Contains(next, bindings[i].Entry) {
					next, changed = append(next, bindings[i].Entry), true
				}
			}
			slices.SortFunc(next, compareEntries)
			return next, changed
		})
		for _, i := range idx {
			errs[i] = err
		}
	}
	return errs
}

// DeleteResult is what one DeleteAcls filter removed, or why it failed.
type DeleteResult struct {
	Deleted []Binding
	Err     error
}

// Delete removes the bindings each filter selects, choosing them from the
// stored nodes (so a binding another broker added a moment ago is seen),
// and returns per filter what was removed.
func (s *Store) Delete(ctx context.Context, filters []Filter) []DeleteResult {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	out := make([]DeleteResult, len(filters))
	var all map[Pattern][]Entry
	err := s.ops.Do(ctx, func(sess coord.Session) (err error) {
		all, err = readAll(ctx, sess, s.log)
		return err
	})
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	patterns := make([]Pattern, 0, len(all))
	for p := range all {
		patterns = append(patterns, p)
	}
	slices.SortFunc(patterns, func(x, y Pattern) int {
		return strings.Compare(x.String(), y.String())
	})
	for _, p := range patterns {
		touched := make([]bool, len(filters))
		for _, e := range all[p] {
			for i, f := range filters {
				if f.Matches(Binding{p, e}) {
					touched[i] = true
				}
			}
		}
		if !slices.Contains(touched, true) {
			continue
		}
		var removed [][]Binding
		err := s.update(ctx, p, func(cur []Entry) ([]Entry, bool) {
			removed = make([][]Binding, len(filters))
			var keep []Entry
			for _, e := range cur {
				hit := false
				for i, f := range filters {
					if f.Matches(Binding{p, e}) {
						removed[i] = append(removed[i], Binding{p, e})
						hit = true
					}
				}
				if !hit {
					keep = append(keep, e)
				}
			}
			return keep, len(keep) != len(cur)
		})
		for i := range filters {
			if err != nil {
				if touched[i] && out[i].Err == nil {
					out[i].Err = err
				}
				continue
			}
			if removed != nil {
				out[i].Deleted = append(out[i].Deleted, removed[i]...)
			}
		}
	}
	for i := range out {
		SortBindings(out[i].Deleted)
	}
	return out
}

// Stored reads every binding from the coordination service, for tests and
// tools that must not depend on a cache.
func (s *Store) Stored(ctx context.Context) (map[Pattern][]Entry, error) {
	var all map[Pattern][]Entry
	err := s.ops.Do(ctx, func(sess coord.Session) (err error) {
		all, err = readAll(ctx, sess, s.log)
		return err
	})
	return all, err
}
