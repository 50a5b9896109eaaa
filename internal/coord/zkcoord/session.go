package zkcoord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/z-division/go-zookeeper/zk"

	"github.com/tributary/tributary/internal/coord"
)

// stateBuffer is the capacity of a session's States channel.
const stateBuffer = 16

// retryPause spaces retries of a call cut off by connection loss; the
// client reconnects on its own meanwhile.
const retryPause = 50 * time.Millisecond

type lifecycle int32

const (
	live lifecycle = iota
	closed
	expired
)

// Session is a ZooKeeper session; it implements coord.Session.
type Session struct {
	conn *zk.Conn
	// zc is conn for go-zookeeper's event loop, which may run before
	// Connect has stored conn.
	zc      atomic.Pointer[zk.Conn]
	servers []string
	chroot  string
	log     *slog.Logger
	id      int64

	state       atomic.Int32 // a lifecycle
	established chan struct{}
	estOnce     sync.Once

	statesMu  sync.Mutex // serialises senders on states
	states    chan coord.SessionState
	connected bool // last delivered state was StateConnected; guarded by statesMu

	credsMu sync.Mutex
	passwd  []byte // from the server's connect response, for Expire
	// acl is the ACL of a node created at a path relative to the chroot.
	acl func(path string) []zk.ACL
}

var _ coord.Session = (*Session)(nil)

var openACL = zk.WorldACL(zk.PermAll)

// aclFor returns the ACL policy of cfg: open, or Kafka's secure ACLs
// (ZkData.defaultAcls): the broker's identity may do anything and the
// world may read, but for sensitive paths, which only the identity sees.
func aclFor(cfg Config) func(path string) []zk.ACL {
	if !cfg.SetACL {
		return func(string) []zk.ACL { return openACL }
	}
	user, password, _ := strings.Cut(cfg.DigestAuth, ":")
	owner := zk.DigestACL(zk.PermAll, user, password)
	public := append(slices.Clone(owner), zk.WorldACL(zk.PermRead)...)
	return func(path string) []zk.ACL {
		for _, root := range cfg.SensitivePaths {
			if path == root || strings.HasPrefix(path, strings.TrimSuffix(root, "/")+"/") {
				return owner
			}
		}
		return public
	}
}

// Connect opens a session on the ensemble named by connect
// ("h1:2181,h2:2181/chroot"), creating the chroot if missing. It fails with
// an error wrapping coord.ErrUnavailable if no session is established within
// cfg's connection timeout.
func Connect(ctx context.Context, connect string, cfg Config) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	servers, chroot, err := ParseConnect(connect)
	if err != nil {
		return nil, err
	}
	log := cfg.logger().With("zookeeper", connect)
	s := &Session{
		servers:     servers,
		chroot:      chroot,
		log:         log,
		established: make(chan struct{}),
		states:      make(chan coord.SessionState, stateBuffer),
		acl:         aclFor(cfg),
	}
	conn, _, err := zk.Connect(servers, cfg.sessionTimeout(),
		zk.WithDialer(s.dial),
		zk.WithLogger(zkLogger{log}),
		zk.WithLogInfo(false),
		zk.WithEventCallback(s.onEvent))
	if err != nil {
		return nil, fmt.Errorf("zkcoord: connect %s: %w", connect, err)
	}
	s.conn = conn
	s.zc.Store(conn)
	timeout := cfg.connectionTimeout()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-s.established:
	case <-timer.C:
		s.abandon()
		return nil, fmt.Errorf("zkcoord: no ZooKeeper session with %s within %v: %w",
			strings.Join(servers, ","), timeout, coord.ErrUnavailable)
	case <-ctx.Done():
		s.abandon()
		return nil, fmt.Errorf("zkcoord: connect %s: %w", connect, ctx.Err())
	}
	s.id = conn.SessionID()
	if cfg.DigestAuth != "" {
		// go-zookeeper sends the credentials again on every reconnect.
		if err := conn.AddAuth("digest", []byte(cfg.DigestAuth)); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("zkcoord: digest authentication with %s: %w", strings.Join(servers, ","), err)
		}
	}
	s.log.Info("zookeeper session established", "session", fmt.Sprintf("0x%x", s.id), "servers", strings.Join(servers, ","),
		"chroot", chroot, "timeout", cfg.sessionTimeout())
	if chroot != "" {
		if err := s.makeChroot(ctx); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// abandon stops a client that never got a session. Closing waits for a
// close request that cannot be sent, so it runs in the background.
func (s *Session) abandon() {
	s.state.Store(int32(closed))
	go s.conn.Close()
}

func (s *Session) makeChroot(ctx context.Context) error {
	for p := range prefixes(s.chroot) {
		err := s.do(ctx, false, func() error {
			_, err := s.conn.Create(p, nil, 0, openACL)
			return err
		})
		if err != nil && !errors.Is(err, coord.ErrNodeExists) {
			return fmt.Errorf("zkcoord: create chroot %s: %w", p, err)
		}
	}
	return nil
}

// prefixes yields "/a", "/a/b", "/a/b/c" for "/a/b/c".
func prefixes(p string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for i := 1; i <= len(p); i++ {
			if i == len(p) || p[i] == '/' {
				if !yield(p[:i]) {
					return
				}
			}
		}
	}
}

// dial refuses new connections once the session has ended: after an expiry
// go-zookeeper would otherwise open a brand-new session behind our back.
func (s *Session) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	if lifecycle(s.state.Load()) != live {
		return nil, fmt.Errorf("zkcoord: session ended, not reconnecting to %s", address)
	}
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &snoopConn{Conn: c, s: s}, nil
}

// onEvent runs on go-zookeeper's event loop for every event; it must not
// block.
func (s *Session) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		s.estOnce.Do(func() { close(s.established) })
		s.deliver(coord.StateConnected)
	case zk.StateDisconnected:
		s.deliver(coord.StateDisconnected)
	case zk.StateExpired:
		// Flip the state before go-zookeeper's loop can dial again.
		if s.state.CompareAndSwap(int32(live), int32(expired)) {
			s.log.Warn("zookeeper session expired")
			s.deliver(coord.StateExpired)
			if c := s.zc.Load(); c != nil {
				go c.Close()
			}
		}
	}
}

// deliver queues a state change. Connected/Disconnected pairs are dropped
// when the buffer is full; StateExpired evicts the oldest entry instead.
func (s *Session) deliver(st coord.SessionState) {
	s.statesMu.Lock()
	defer s.statesMu.Unlock()
	if st != coord.StateExpired && lifecycle(s.state.Load()) != live {
		return // the client's teardown after Close or expiry is not news
	}
	switch st {
	case coord.StateConnected:
		if s.connected {
			return
		}
		s.connected = true
	case coord.StateDisconnected:
		if !s.connected {
			return // reconnect attempts repeat Disconnected; report it once
		}
		s.connected = false
		s.log.Info("zookeeper connection lost")
	}
	for {
		select {
		case s.states <- st:
			return
		default:
			if st != coord.StateExpired {
				return
			}
			select {
			case <-s.states:
			default:
			}
		}
	}
}

// ID returns the session id. It stays the same after expiry.
func (s *Session) ID() int64 { return s.id }

// Server returns the address of the server the client is (or was last)
// connected to.
func (s *Session) Server() string { return s.conn.Server() }

// States delivers session state changes; the first is StateConnected. It is
// never closed.
func (s *Session) States() <-chan coord.SessionState { return s.states }

// Close ends the session on the server, deleting its ephemeral nodes, and
// fires pending watches with EventSessionLost. Closing an expired or closed
// session is a no-op.
func (s *Session) Close() error {
	if !s.state.CompareAndSwap(int32(live), int32(closed)) {
		return nil
	}
	s.conn.Close()
	s.log.Info("zookeeper session closed")
	return nil
}

func (s *Session) ended() error {
	switch lifecycle(s.state.Load()) {
	case closed:
		return coord.ErrClosed
	case expired:
		return coord.ErrSessionExpired
	}
	return nil
}

// full maps a caller's path into the chroot.
func (s *Session) full(p string) string {
	if s.chroot == "" {
		return p
	}
	if p == "/" {
		return s.chroot
	}
	return s.chroot + p
}

// rel maps a server path back out of the chroot.
func (s *Session) rel(p string) string {
	if s.chroot == "" {
		return p
	}
	if p == s.chroot {
		return "/"
	}
	return strings.TrimPrefix(p, s.chroot)
}

// do runs one request, honouring ctx, and maps its error. Reads (retry) are
// repeated across connection loss; other requests only when they were
// never sent.
func (s *Session) do(ctx context.Context, retry bool, fn func() error) error {
	for {
		if err := s.ended(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		err := call(ctx, fn)
		if err == nil {
			return nil
		}
		if errors.Is(err, ctx.Err()) && ctx.Err() != nil {
			return err
		}
		if end := s.ended(); end != nil {
			return end
		}
		lost := isConnLoss(err)
		if errors.Is(err, zk.ErrNoServer) || (retry && lost) {
			select {
			case <-time.After(retryPause):
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if lost {
			return fmt.Errorf("%w: connection lost, outcome unknown: %w", coord.ErrUnavailable, err)
		}
		return mapErr(err)
	}
}

// call runs fn but returns early if ctx ends; fn then finishes unobserved.
func call(ctx context.Context, fn func() error) error {
	if ctx.Done() == nil {
		return fn()
	}
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func isConnLoss(err error) bool {
	if errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrSessionMoved) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed)
}

// errTable maps go-zookeeper's errors to coord's sentinels.
var errTable = map[error]error{
	zk.ErrNoNode:                  coord.ErrNoNode,
	zk.ErrNodeExists:              coord.ErrNodeExists,
	zk.ErrBadVersion:              coord.ErrBadVersion,
	zk.ErrNotEmpty:                coord.ErrNotEmpty,
	zk.ErrNoChildrenForEphemerals: coord.ErrNoChildrenForEphemerals,
	zk.ErrSessionExpired:          coord.ErrSessionExpired,
	zk.ErrInvalidPath:             coord.ErrBadPath,
	zk.ErrBadArguments:            coord.ErrBadPath,
}

func mapErr(err error) error {
	for from, to := range errTable {
		if errors.Is(err, from) {
			return to
		}
	}
	return err
}

func convertStat(st *zk.Stat) coord.Stat {
	if st == nil {
		return coord.Stat{}
	}
	return coord.Stat{
		Version:        st.Version,
		CVersion:       st.Cversion,
		EphemeralOwner: st.EphemeralOwner,
		NumChildren:    st.NumChildren,
		Created:        time.UnixMilli(st.Ctime),
		Modified:       time.UnixMilli(st.Mtime),
	}
}

func flags(mode coord.CreateMode) (int32, error) {
	switch mode {
	case coord.Persistent:
		return 0, nil
	case coord.Ephemeral:
		return zk.FlagEphemeral, nil
	case coord.PersistentSequential:
		return zk.FlagSequence, nil
	case coord.EphemeralSequential:
		return zk.FlagEphemeral | zk.FlagSequence, nil
	}
	return 0, fmt.Errorf("zkcoord: unknown create mode %d", mode)
}

func wrap(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("zkcoord: %s %s: %w", op, path, err)
}

// Create implements coord.Session.
func (s *Session) Create(ctx context.Context, path string, data []byte, mode coord.CreateMode) (string, error) {
	if err := coord.ValidatePath(path); err != nil {
		return "", err
	}
	fl, err := flags(mode)
	if err != nil {
		return "", err
	}
	var name string
	err = s.do(ctx, false, func() (err error) {
		name, err = s.conn.Create(s.full(path), data, fl, s.acl(path))
		return err
	})
	if err != nil {
		return "", wrap("create", path, err)
	}
	return s.rel(name), nil
}

// CreateAll implements coord.Session.
func (s *Session) CreateAll(ctx context.Context, path string, data []byte, mode coord.CreateMode) (string, error) {
	if err := coord.ValidatePath(path); err != nil {
		return "", err
	}
	name, err := s.Create(ctx, path, data, mode)
	if !errors.Is(err, coord.ErrNoNode) {
		return name, err
	}
	// A concurrent delete of a parent can undo the chain between the two
	// steps; a few rounds settle any realistic race.
	for range 5 {
		for p := range prefixes(coord.Parent(path)) {
			if _, err := s.Create(ctx, p, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
				return "", err
			}
		}
		name, err = s.Create(ctx, path, data, mode)
		if !errors.Is(err, coord.ErrNoNode) {
			return name, err
		}
	}
	return "", err
}

// Get implements coord.Session.
func (s *Session) Get(ctx context.Context, path string) ([]byte, coord.Stat, error) {
	if err := coord.ValidatePath(path); err != nil {
		return nil, coord.Stat{}, err
	}
	var data []byte
	var st *zk.Stat
	err := s.do(ctx, true, func() (err error) {
		data, st, err = s.conn.Get(s.full(path))
		return err
	})
	if err != nil {
		return nil, coord.Stat{}, wrap("get", path, err)
	}
	return data, convertStat(st), nil
}

// GetW implements coord.Session.
func (s *Session) GetW(ctx context.Context, path string) ([]byte, coord.Stat, <-chan coord.Event, error) {
	if err := coord.ValidatePath(path); err != nil {
		return nil, coord.Stat{}, nil, err
	}
	var data []byte
	var st *zk.Stat
	var ch <-chan zk.Event
	err := s.do(ctx, true, func() (err error) {
		data, st, ch, err = s.conn.GetW(s.full(path))
		return err
	})
	if err != nil {
		return nil, coord.Stat{}, nil, wrap("get", path, err)
	}
	return data, convertStat(st), s.watch(ch), nil
}

// Exists implements coord.Session.
func (s *Session) Exists(ctx context.Context, path string) (bool, coord.Stat, error) {
	if err := coord.ValidatePath(path); err != nil {
		return false, coord.Stat{}, err
	}
	var ok bool
	var st *zk.Stat
	err := s.do(ctx, true, func() (err error) {
		ok, st, err = s.conn.Exists(s.full(path))
		return err
	})
	if err != nil || !ok {
		return false, coord.Stat{}, wrap("exists", path, err)
	}
	return true, convertStat(st), nil
}

// ExistsW implements coord.Session.
func (s *Session) ExistsW(ctx context.Context, path string) (bool, coord.Stat, <-chan coord.Event, error) {
	if err := coord.ValidatePath(path); err != nil {
		return false, coord.Stat{}, nil, err
	}
	var ok bool
	var st *zk.Stat
	var ch <-chan zk.Event
	err := s.do(ctx, true, func() (err error) {
		ok, st, ch, err = s.conn.ExistsW(s.full(path))
		return err
	})
	if err != nil {
		return false, coord.Stat{}, nil, wrap("exists", path, err)
	}
	if !ok {
		return false, coord.Stat{}, s.watch(ch), nil
	}
	return true, convertStat(st), s.watch(ch), nil
}

// Set implements coord.Session.
func (s *Session) Set(ctx context.Context, path string, data []byte, version int32) (coord.Stat, error) {
	if err := coord.ValidatePath(path); err != nil {
		return coord.Stat{}, err
	}
	var st *zk.Stat
	err := s.do(ctx, false, func() (err error) {
		st, err = s.conn.Set(s.full(path), data, version)
		return err
	})
	if err != nil {
		return coord.Stat{}, wrap("set", path, err)
	}
	return convertStat(st), nil
}

// Delete implements coord.Session.
func (s *Session) Delete(ctx context.Context, path string, version int32) error {
	if err := coord.ValidatePath(path); err != nil {
		return err
	}
	if path == "/" {
		return fmt.Errorf("zkcoord: delete /: %w: the root cannot be deleted", coord.ErrBadPath)
	}
	return wrap("delete", path, s.do(ctx, false, func() error {
		return s.conn.Delete(s.full(path), version)
	}))
}

// Children implements coord.Session.
func (s *Session) Children(ctx context.Context, path string) ([]string, coord.Stat, error) {
	if err := coord.ValidatePath(path); err != nil {
		return nil, coord.Stat{}, err
	}
	var names []string
	var st *zk.Stat
	err := s.do(ctx, true, func() (err error) {
		names, st, err = s.conn.Children(s.full(path))
		return err
	})
	if err != nil {
		return nil, coord.Stat{}, wrap("children", path, err)
	}
	slices.Sort(names)
	return names, convertStat(st), nil
}

// ChildrenW implements coord.Session.
func (s *Session) ChildrenW(ctx context.Context, path string) ([]string, coord.Stat, <-chan coord.Event, error) {
	if err := coord.ValidatePath(path); err != nil {
		return nil, coord.Stat{}, nil, err
	}
	var names []string
	var st *zk.Stat
	var ch <-chan zk.Event
	err := s.do(ctx, true, func() (err error) {
		names, st, ch, err = s.conn.ChildrenW(s.full(path))
		return err
	})
	if err != nil {
		return nil, coord.Stat{}, nil, wrap("children", path, err)
	}
	slices.Sort(names)
	return names, convertStat(st), s.watch(ch), nil
}

// Multi implements coord.Session.
func (s *Session) Multi(ctx context.Context, ops ...coord.Op) error {
	if len(ops) == 0 {
		return s.ended()
	}
	reqs := make([]any, len(ops))
	for i, op := range ops {
		if err := coord.ValidatePath(op.Path); err != nil {
			return fmt.Errorf("zkcoord: multi op %d: %w", i, err)
		}
		p := s.full(op.Path)
		switch op.Kind {
		case coord.OpCreate:
			fl, err := flags(op.Mode)
			if err != nil {
				return err
			}
			reqs[i] = &zk.CreateRequest{Path: p, Data: op.Data, Acl: s.acl(op.Path), Flags: fl}
		case coord.OpSet:
			reqs[i] = &zk.SetDataRequest{Path: p, Data: op.Data, Version: op.Version}
		case coord.OpDelete:
			reqs[i] = &zk.DeleteRequest{Path: p, Version: op.Version}
		case coord.OpCheck:
			reqs[i] = &zk.CheckVersionRequest{Path: p, Version: op.Version}
		default:
			return fmt.Errorf("zkcoord: multi op %d: unknown kind %d", i, op.Kind)
		}
	}
	var res []zk.MultiResponse
	err := s.do(ctx, false, func() (err error) {
		res, err = s.conn.Multi(reqs...)
		return err
	})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// call gave up waiting: the request may still be running and
		// writing res, so res must not be read.
		return wrap("multi", ops[0].Path, err)
	}
	// ZooKeeper marks the failing op with its error and the ones after it
	// with a runtime inconsistency; report the first op with a known error.
	for i, r := range res {
		if r.Error == nil {
			continue
		}
		if mapped := mapErr(r.Error); mapped != r.Error {
			return fmt.Errorf("zkcoord: multi op %d (%s): %w", i, ops[i].Path, mapped)
		}
	}
	return fmt.Errorf("zkcoord: multi: %w", err)
}

// watch converts a go-zookeeper watch into a coord one. go-zookeeper ends
// watches with EventNotWatching when the session expires or is closed.
func (s *Session) watch(zch <-chan zk.Event) <-chan coord.Event {
	out := make(chan coord.Event, 1)
	go func() {
		defer close(out)
		ev, ok := <-zch
		if !ok {
			return
		}
		var typ coord.EventType
		switch ev.Type {
		case zk.EventNodeCreated:
			typ = coord.EventNodeCreated
		case zk.EventNodeDeleted:
			typ = coord.EventNodeDeleted
		case zk.EventNodeDataChanged:
			typ = coord.EventNodeDataChanged
		case zk.EventNodeChildrenChanged:
			typ = coord.EventNodeChildrenChanged
		default:
			typ = coord.EventSessionLost
		}
		out <- coord.Event{Type: typ, Path: s.rel(ev.Path)}
	}()
	return out
}

// zkLogger routes go-zookeeper's printf logging to slog at debug level:
// it reports every reconnect attempt, which is noise at info level.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug("zookeeper client: " + fmt.Sprintf(format, args...))
}
