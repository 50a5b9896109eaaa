package memcoord

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// Server is one in-process coordination tree shared by its Sessions.
type Server struct {
	mu       sync.Mutex
	root     *node
	sessions map[int64]*Session
	lastID   int64
	// Watches live on the server, keyed by path, as in ZooKeeper: data
	// watches come from GetW and ExistsW (also on missing nodes), child
	// watches from ChildrenW.
	dataWatches  map[string][]*watch
	childWatches map[string][]*watch
	// store is where a server from Open logs its writes; nil for
	// NewServer's and after Close, which sets closed.
	store  *store
	closed bool
}

type node struct {
	data []byte
	// stat.CVersion counts child creations only, as ZooKeeper's DataNode
	// does internally: it is the sequential-name counter. Readers get
	// creations plus deletions (statCopy), ZooKeeper's reported cversion.
	// NumChildren is derived from children on read.
	stat     coord.Stat
	children map[string]*node
}

type watch struct {
	owner *Session
	path  string
	ch    chan coord.Event
}

// NewServer returns an empty tree holding only the root node "/".
func NewServer() *Server {
	now := time.Now()
	return &Server{
		root:         &node{stat: coord.Stat{Created: now, Modified: now}, children: map[string]*node{}},
		sessions:     map[int64]*Session{},
		dataWatches:  map[string][]*watch{},
		childWatches: map[string][]*watch{},
	}
}

// Connect opens a new session on the tree. Its States channel already holds
// StateConnected, as a ZooKeeper session's does once established.
func (s *Server) Connect(cfg Config) *Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastID++
	sess := &Session{
		srv:    s,
		id:     s.lastID,
		log:    cfg.logger().With("session", s.lastID),
		states: make(chan coord.SessionState, stateBuffer),
	}
	s.sessions[sess.id] = sess
	sess.states <- coord.StateConnected
	sess.log.Debug("memcoord session opened")
	return sess
}

// Expire ends a live session the way a ZooKeeper session expiry does: its
// ephemeral nodes are deleted, its pending watches fire with
// EventSessionLost, StateExpired is delivered on its States channel and every
// later call on it fails with coord.ErrSessionExpired.
func (s *Server) Expire(sessionID int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[sessionID]
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownSession, sessionID)
	}
	s.endLocked(sess, stateExpired)
	sess.deliverState(coord.StateExpired)
	sess.log.Debug("memcoord session expired")
	return nil
}

// Sessions returns the ids of the live sessions, ascending.
func (s *Server) Sessions() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// endLocked removes a session: its own watches see EventSessionLost first
// (a gone session cannot observe the deletion of its ephemerals), then its
// ephemeral nodes are deleted, firing the other sessions' watches.
func (s *Server) endLocked(sess *Session, st sessionState) {
	sess.state = st
	delete(s.sessions, sess.id)
	for _, m := range []map[string][]*watch{s.dataWatches, s.childWatches} {
		for p, ws := range m {
			kept := ws[:0]
			for _, w := range ws {
				if w.owner == sess {
					w.fire(coord.Event{Type: coord.EventSessionLost, Path: w.path})
				} else {
					kept = append(kept, w)
				}
			}
			if len(kept) == 0 {
				delete(m, p)
			} else {
				m[p] = kept
			}
		}
	}
	var eph []string
	s.walk("/", s.root, func(p string, n *node) {
		if n.stat.EphemeralOwner == sess.id {
			eph = append(eph, p)
		}
	})
	for _, p := range eph {
		// Ephemerals have no children, so deleting them cannot fail.
		// Nothing to log: an ephemeral node never is, and a deletion
		// leaves the parent's stat as it was (its creation counter).
		var t txn
		if err := s.delete(&t, p, coord.AnyVersion); err == nil {
			s.fire(t.triggers)
		}
	}
}

func (s *Server) walk(p string, n *node, fn func(string, *node)) {
	fn(p, n)
	for name, c := range n.children {
		s.walk(coord.Join(p, name), c, fn)
	}
}

// lookup returns the node at a validated path, or nil.
func (s *Server) lookup(p string) *node {
	n := s.root
	if p == "/" {
		return n
	}
	start := 1
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			n = n.children[p[start:i]]
			if n == nil {
				return nil
			}
			start = i + 1
		}
	}
	return n
}

func (n *node) statCopy() coord.Stat {
	st := n.stat
	st.NumChildren = int32(len(n.children))
	// Every child created is either still there or was deleted.
	st.CVersion = 2*n.stat.CVersion - st.NumChildren
	return st
}

// trigger is a watch event a write will fire if it commits.
type trigger struct {
	typ  coord.EventType
	path string
}

// txn collects undo steps and triggers so that Multi can roll back a
// partly applied batch and fire watches only for a committed one.
type txn struct {
	undo     []func()
	triggers []trigger
	// dirty are the paths whose node was created, changed or deleted
	// (a durable server logs their state at commit).
	dirty []string
}

func (t *txn) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
}

func (s *Server) create(t *txn, owner int64, p string, data []byte, mode coord.CreateMode) (string, error) {
	if err := coord.ValidatePath(p); err != nil {
		return "", err
	}
	if mode < coord.Persistent || mode > coord.EphemeralSequential {
		return "", fmt.Errorf("memcoord: create %s: unknown mode %d", p, mode)
	}
	if p == "/" {
		return "", fmt.Errorf("memcoord: create %s: %w", p, coord.ErrNodeExists)
	}
	parentPath := coord.Parent(p)
	parent := s.lookup(parentPath)
	if parent == nil {
		return "", fmt.Errorf("memcoord: create %s: parent: %w", p, coord.ErrNoNode)
	}
	name := p
	if mode == coord.PersistentSequential || mode == coord.EphemeralSequential {
		name = fmt.Sprintf("%s%010d", p, parent.stat.CVersion)
	}
	base := coord.Base(name)
	if _, ok := parent.children[base]; ok {
		return "", fmt.Errorf("memcoord: create %s: %w", name, coord.ErrNodeExists)
	}
	if parent.stat.EphemeralOwner != 0 {
		return "", fmt.Errorf("memcoord: create %s: %w", name, coord.ErrNoChildrenForEphemerals)
	}
	now := time.Now()
	n := &node{data: clone(data), stat: coord.Stat{Created: now, Modified: now}, children: map[string]*node{}}
	if mode == coord.Ephemeral || mode == coord.EphemeralSequential {
		n.stat.EphemeralOwner = owner
	}
	parent.children[base] = n
	parent.stat.CVersion++
	t.undo = append(t.undo, func() {
		delete(parent.children, base)
		parent.stat.CVersion--
	})
	t.triggers = append(t.triggers,
		trigger{coord.EventNodeCreated, name},
		trigger{coord.EventNodeChildrenChanged, parentPath})
	t.dirty = append(t.dirty, parentPath, name)
	return name, nil
}

func (s *Server) set(t *txn, p string, data []byte, version int32) (coord.Stat, error) {
	if err := coord.ValidatePath(p); err != nil {
		return coord.Stat{}, err
	}
	n := s.lookup(p)
	if n == nil {
		return coord.Stat{}, fmt.Errorf("memcoord: set %s: %w", p, coord.ErrNoNode)
	}
	if version != coord.AnyVersion && version != n.stat.Version {
		return coord.Stat{}, fmt.Errorf("memcoord: set %s: version %d, node has %d: %w",
			p, version, n.stat.Version, coord.ErrBadVersion)
	}
	oldData, oldStat := n.data, n.stat
	n.data = clone(data)
	n.stat.Version++
	n.stat.Modified = time.Now()
	t.undo = append(t.undo, func() { n.data, n.stat = oldData, oldStat })
	t.triggers = append(t.triggers, trigger{coord.EventNodeDataChanged, p})
	t.dirty = append(t.dirty, p)
	return n.statCopy(), nil
}

func (s *Server) delete(t *txn, p string, version int32) error {
	if err := coord.ValidatePath(p); err != nil {
		return err
	}
	if p == "/" {
		return fmt.Errorf("memcoord: delete %s: %w: the root cannot be deleted", p, coord.ErrBadPath)
	}
	n := s.lookup(p)
	if n == nil {
		return fmt.Errorf("memcoord: delete %s: %w", p, coord.ErrNoNode)
	}
	if version != coord.AnyVersion && version != n.stat.Version {
		return fmt.Errorf("memcoord: delete %s: version %d, node has %d: %w",
			p, version, n.stat.Version, coord.ErrBadVersion)
	}
	if len(n.children) > 0 {
		return fmt.Errorf("memcoord: delete %s: %w", p, coord.ErrNotEmpty)
	}
	parentPath := coord.Parent(p)
	parent := s.lookup(parentPath)
	base := coord.Base(p)
	delete(parent.children, base)
	t.undo = append(t.undo, func() { parent.children[base] = n })
	t.triggers = append(t.triggers,
		trigger{coord.EventNodeDeleted, p},
		trigger{coord.EventNodeChildrenChanged, parentPath})
	t.dirty = append(t.dirty, p)
	return nil
}

// commit makes a write durable (on a server from Open) and then fires its
// watches; if it cannot be logged, the write is undone and the error
// returned, as a ZooKeeper server that cannot write its log fails it.
func (s *Server) commit(t *txn) error {
	if err := s.persist(t); err != nil {
		t.rollback()
		return err
	}
	s.fire(t.triggers)
	return nil
}

func (s *Server) check(p string, version int32) error {
	if err := coord.ValidatePath(p); err != nil {
		return err
	}
	n := s.lookup(p)
	if n == nil {
		return fmt.Errorf("memcoord: check %s: %w", p, coord.ErrNoNode)
	}
	if version != coord.AnyVersion && version != n.stat.Version {
		return fmt.Errorf("memcoord: check %s: version %d, node has %d: %w",
			p, version, n.stat.Version, coord.ErrBadVersion)
	}
	return nil
}

// fire delivers committed triggers to the watches ZooKeeper would fire:
// a node's data watches see its creation, data change and deletion; its
// child watches see its deletion; a parent's child watches see children
// come and go.
func (s *Server) fire(triggers []trigger) {
	for _, tr := range triggers {
		ev := coord.Event{Type: tr.typ, Path: tr.path}
		switch tr.typ {
		case coord.EventNodeCreated, coord.EventNodeDataChanged:
			s.fireAll(s.dataWatches, tr.path, ev)
		case coord.EventNodeDeleted:
			s.fireAll(s.dataWatches, tr.path, ev)
			s.fireAll(s.childWatches, tr.path, ev)
		case coord.EventNodeChildrenChanged:
			s.fireAll(s.childWatches, tr.path, ev)
		}
	}
}

func (s *Server) fireAll(m map[string][]*watch, p string, ev coord.Event) {
	for _, w := range m[p] {
		w.fire(ev)
	}
	delete(m, p)
}

func (s *Server) addWatch(m map[string][]*watch, owner *Session, p string) <-chan coord.Event {
	w := &watch{owner: owner, path: p, ch: make(chan coord.Event, 1)}
	m[p] = append(m[p], w)
	return w.ch
}

// fire never blocks: the channel has room for its one event.
func (w *watch) fire(ev coord.Event) {
	w.ch <- ev
	close(w.ch)
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
