package quota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/tributary/tributary/broker/entityconfig"
	"github.com/tributary/tributary/internal/coord"
)

// Values are one entity's quotas, by key.
type Values map[string]float64

// Store is every entity's quotas, as Kafka keeps them in ZooKeeper (see
// doc.go), through a coord.Session: a cache loaded whole when a session
// starts and kept current by the change notifications (entityconfig.Follow),
// so Limit never blocks; and the reads and writes of the admin APIs, which
// go to the coordination service. Safe for concurrent use.
type Store struct {
	log *slog.Logger

	mu     sync.RWMutex
	quotas map[Entity]Values
	synced chan struct{}
	change chan struct{} // closed and replaced at every change
	any    atomic.Bool   // some entity has a quota

	ops *coord.Redialer

	follower *coord.Follower
}

// NewStore starts a store whose sessions come from connect; it runs until
// Close or until ctx ends. logger may be nil.
func NewStore(ctx context.Context, connect coord.SessionFactory, logger *slog.Logger) *Store {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{log: logger, quotas: map[Entity]Values{},
		synced: make(chan struct{}), change: make(chan struct{}),
		ops: coord.NewRedialer(connect, ErrClosed)}
	s.follower = coord.StartFollower(ctx, "quota: client quota cache", connect, s.follow, logger)
	return s
}

// Close stops the store and ends its sessions.
func (s *Store) Close() error {
	s.follower.Stop()
	return s.ops.Close()
}

// Synced is closed once the cache has been loaded.
func (s *Store) Synced() <-chan struct{} { return s.synced }

// Any reports whether some entity has a quota: without one, nothing needs
// to be measured.
func (s *Store) Any() bool { return s.any.Load() }

// Limit resolves the quota of key for a request of user (the principal's
// name) and client id, with KIP-55's precedence (levels): the limit, the
// tags its usage is counted under, and false when no entity sets key.
func (s *Store) Limit(key, user, client string) (float64, Tags, bool) {
	if !s.any.Load() {
		return 0, Tags{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range levels(user, client) {
		if v, ok := s.quotas[e][key]; ok {
			return v, tagsOf(e, user, client), true
		}
	}
	return 0, Tags{}, false
}

// Cached returns a copy of the cache.
func (s *Store) Cached() map[Entity]Values {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[Entity]Values, len(s.quotas))
	for e, v := range s.quotas {
		out[e] = maps.Clone(v)
	}
	return out
}

// Await waits until cond holds on the cache (checked at every change) or
// ctx ends; for tests and for callers that must see their own write.
func (s *Store) Await(ctx context.Context, cond func(cached map[Entity]Values) bool) error {
	for {
		s.mu.RLock()
		ch := s.change
		s.mu.RUnlock()
		if cond(s.Cached()) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Store) follow(ctx context.Context, sess coord.Session) error {
	load := func(ctx context.Context) error {
		all, err := readAll(ctx, sess, s.log)
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.quotas = all
		s.changedLocked()
		select {
		case <-s.synced:
		default:
			close(s.synced)
		}
		return nil
	}
	return entityconfig.Follow(ctx, sess, load, func(ctx context.Context, path string) error {
		e, ok := ParsePath(path)
		if !ok {
			return nil // a topic's, a broker's, or unreadable
		}
		v, err := readEntity(ctx, sess, e, s.log)
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(v) == 0 {
			delete(s.quotas, e)
		} else {
			s.quotas[e] = v
		}
		s.changedLocked()
		return nil
	})
}

func (s *Store) changedLocked() {
	s.any.Store(len(s.quotas) > 0)
	close(s.change)
	s.change = make(chan struct{})
}

// readEntity reads e's quota keys; other keys (SCRAM credentials) are not
// quotas, and a malformed node or value is skipped with a warning, as
// Kafka's brokers skip what they cannot read.
func readEntity(ctx context.Context, sess coord.Session, e Entity, log *slog.Logger) (Values, error) {
	cfg, _, err := entityconfig.Read(ctx, sess, e.Path())
	if errors.Is(err, entityconfig.ErrMalformed) {
		log.Warn("quota: ignoring an unreadable entity config", "entity", e.Path(), "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseValues(e, cfg, log), nil
}

func parseValues(e Entity, cfg map[string]string, log *slog.Logger) Values {
	var v Values
	for _, k := range Keys {
		raw, ok := cfg[k]
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(raw, 64)
		if err == nil {
			err = ValidateValue(k, f)
		}
		if err != nil {
			log.Warn("quota: ignoring an unreadable quota", "entity", e.Path(), "key", k, "value", raw, "err", err)
			continue
		}
		if v == nil {
			v = Values{}
		}
		v[k] = f
	}
	return v
}

// readAll reads every user, user+client and client entity with quotas.
func readAll(ctx context.Context, sess coord.Session, log *slog.Logger) (map[Entity]Values, error) {
	out := map[Entity]Values{}
	add := func(e Entity) error {
		v, err := readEntity(ctx, sess, e, log)
		if len(v) > 0 {
			out[e] = v
		}
		return err
	}
	children := func(path string) ([]string, error) {
		names, _, err := sess.Children(ctx, entityconfig.Path(path))
		if errors.Is(err, coord.ErrNoNode) {
			return nil, nil
		}
		return names, err
	}
	users, err := children("users")
	if err != nil {
		return nil, err
	}
	for _, node := range users {
		u, err := parseName(node)
		if err != nil {
			continue
		}
		if err := add(Entity{User: u}); err != nil {
			return nil, err
		}
		clients, err := children("users/" + node + "/clients")
		if err != nil {
			return nil, err
		}
		for _, cn := range clients {
			if c, err := parseName(cn); err == nil {
				if err := add(Entity{User: u, Client: c}); err != nil {
					return nil, err
				}
			}
		}
	}
	clients, err := children("clients")
	if err != nil {
		return nil, err
	}
	for _, node := range clients {
		if c, err := parseName(node); err == nil {
			if err := add(Entity{Client: c}); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Read reads every entity's quotas from the coordination service (what
// DescribeClientQuotas answers: a broker sees another's write at once).
func (s *Store) Read(ctx context.Context) (map[Entity]Values, error) {
	var all map[Entity]Values
	err := s.ops.Do(ctx, func(sess coord.Session) (err error) {
		all, err = readAll(ctx, sess, s.log)
		return err
	})
	return all, err
}

// Alter sets and removes quotas of e in one compare-and-set on its node,
// keeping every other key (a user's SCRAM credentials), then writes the
// change notification every broker follows. Values are checked first
// (ValidateValue); nothing is written on an error.
func (s *Store) Alter(ctx context.Context, e Entity, set Values, remove []string) error {
	if !e.Valid() {
		return fmt.Errorf("%w: no user or client id", ErrBadEntity)
	}
	for k, v := range set {
		if err := ValidateValue(k, v); err != nil {
			return err
		}
	}
	for _, k := range remove {
		if !IsKey(k) {
			return fmt.Errorf("%w: %s", ErrUnknownKey, k)
		}
	}
	return s.ops.Do(ctx, func(sess coord.Session) error {
		_, err := entityconfig.Update(ctx, sess, e.Path(), false, func(cfg map[string]string) error {
			for _, k := range remove {
				delete(cfg, k)
			}
			for k, v := range set {
				cfg[k] = formatValue(k, v)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("quota: altering %s: %w", e.Path(), err)
		}
		return nil
	})
}

// formatValue writes a value as Kafka's ConfigCommand does: byte rates as
// whole numbers, the others as decimals.
func formatValue(key string, v float64) string {
	if longKey(key) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
