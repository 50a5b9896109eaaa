package sasl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/tributary/tributary/broker/entityconfig"
	"github.com/tributary/tributary/internal/coord"
)

// usersPath holds the users' nodes (frozen: Kafka's layout; the node
// and notification formats are broker/entityconfig's).
const usersPath = "/config/users"

// CredentialStore is the SCRAM credentials of every user, as Kafka keeps
// them in ZooKeeper (see doc.go), through a coord.Session: a cache that is
// loaded whole when a session starts and kept current by Kafka's change
// notifications, so Lookup never blocks; and the reads and writes of the
// admin APIs, which go to the coordination service. Safe for concurrent use.
type CredentialStore struct {
	log *slog.Logger

	mu     sync.RWMutex
	creds  map[string]map[string]ScramCredential // user → mechanism → credential
	synced chan struct{}                         // closed at the first full load
	gen    uint64                                // counts applied changes
	change chan struct{}                         // closed and replaced at every change

	// ops is the session of the admin operations (UpdateUser, ReadUser, Users).
	ops *coord.Redialer

	follower *coord.Follower
}

// NewCredentialStore starts a store whose sessions come from connect; it
// runs until Close or until ctx ends. logger may be nil.
func NewCredentialStore(ctx context.Context, connect coord.SessionFactory, logger *slog.Logger) *CredentialStore {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &CredentialStore{log: logger, creds: map[string]map[string]ScramCredential{},
		synced: make(chan struct{}), change: make(chan struct{}),
		ops: coord.NewRedialer(connect, ErrClosed)}
	// The cache: a session at a time, reconnecting after a loss.
	s.follower = coord.StartFollower(ctx, "sasl: SCRAM credential cache", connect, s.follow, logger)
	return s
}

// Lookup implements ScramCredentials from the cache.
func (s *CredentialStore) Lookup(user, mechanism string) (ScramCredential, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.creds[user][mechanism]
	return c, ok
}

// Synced is closed once the cache has been loaded.
func (s *CredentialStore) Synced() <-chan struct{} { return s.synced }

// Await waits until cond holds on the cache (checked at every change)
// or ctx ends; for tests and for callers that must see their own write.
func (s *CredentialStore) Await(ctx context.Context, cond func(lookup func(user, mechanism string) (ScramCredential, bool)) bool) error {
	for {
		s.mu.RLock()
		ch := s.change
		s.mu.RUnlock()
		if cond(s.Lookup) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops the store and ends its sessions.
func (s *CredentialStore) Close() error {
	s.follower.Stop()
	return s.ops.Close()
}

func (s *CredentialStore) bump() {
	s.gen++
	close(s.change)
	s.change = make(chan struct{})
}

// follow loads every user and then re-reads each user a change
// notification names (entityconfig.Follow).
func (s *CredentialStore) follow(ctx context.Context, sess coord.Session) error {
	load := func(ctx context.Context) error {
		all, err := readAllUsers(ctx, sess)
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.creds = map[string]map[string]ScramCredential{}
		for user, cfg := range all {
			s.setLocked(user, cfg)
		}
		s.bump()
		select {
		case <-s.synced:
		default:
			close(s.synced)
		}
		return nil
	}
	return entityconfig.Follow(ctx, sess, load, func(ctx context.Context, entityPath string) error {
		return s.apply(ctx, sess, entityPath)
	})
}

// apply re-reads the user a notification names; notifications of other
// entities (topics, clients, brokers, a user's clients' quotas) are not
// ours.
func (s *CredentialStore) apply(ctx context.Context, sess coord.Session, entityPath string) error {
	node, ok := strings.CutPrefix(entityPath, "users/")
	if !ok || node == "" || strings.Contains(node, "/") || node == entityconfig.DefaultEntity {
		return nil
	}
	user, err := DesanitizeUser(node)
	if err != nil {
		s.log.Warn("sasl: ignoring a config change of an unreadable user node", "entity_path", entityPath, "err", err)
		return nil
	}
	uc, err := readUser(ctx, sess, user)
	if err != nil && !errors.Is(err, ErrMalformedCredential) {
		return err
	}
	if err != nil {
		s.log.Warn("sasl: unreadable user config; its credentials are dropped", "user", user, "err", err)
	}
	s.mu.Lock()
	s.setLocked(user, uc.Config)
	s.bump()
	s.mu.Unlock()
	return nil
}

// setLocked caches the SCRAM credentials of a user's config; malformed
// ones are left out with a warning, so the user cannot log in with them.
func (s *CredentialStore) setLocked(user string, cfg map[string]string) {
	delete(s.creds, user)
	for _, m := range ScramMechanisms {
		v, ok := cfg[m.Name]
		if !ok {
			continue
		}
		c, err := ParseScramCredential(v)
		if err != nil {
			s.log.Warn("sasl: ignoring an unreadable SCRAM credential", "user", user, "mechanism", m.Name, "err", err)
			continue
		}
		if s.creds[user] == nil {
			s.creds[user] = map[string]ScramCredential{}
		}
		s.creds[user][m.Name] = c
	}
}

// UserConfig is the entity config of one user: /config/users/<user>.
// Config holds every key, SCRAM credentials and quotas alike.
type UserConfig struct {
	User   string
	Config map[string]string
	// Version is the node's version, for UpdateUser's compare-and-set;
	// -1 when the node does not exist.
	Version int32
}

func userEntity(user string) string { return "users/" + SanitizeUser(user) }

// readUser reads a user's config; a missing node is an empty config.
func readUser(ctx context.Context, sess coord.Session, user string) (UserConfig, error) {
	cfg, version, err := entityconfig.Read(ctx, sess, userEntity(user))
	if errors.Is(err, entityconfig.ErrMalformed) {
		return UserConfig{User: user, Config: map[string]string{}, Version: version},
			fmt.Errorf("%w: %w", ErrMalformedCredential, err)
	}
	if err != nil {
		return UserConfig{}, err
	}
	return UserConfig{User: user, Config: cfg, Version: version}, nil
}

func readAllUsers(ctx context.Context, sess coord.Session) (map[string]map[string]string, error) {
	nodes, _, err := sess.Children(ctx, usersPath)
	if errors.Is(err, coord.ErrNoNode) {
		return map[string]map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for _, node := range nodes {
		user, err := DesanitizeUser(node)
		if err != nil {
			continue
		}
		uc, err := readUser(ctx, sess, user)
		if errors.Is(err, ErrMalformedCredential) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[user] = uc.Config
	}
	return out, nil
}

// ReadUser reads one user's config from the coordination service.
func (s *CredentialStore) ReadUser(ctx context.Context, user string) (UserConfig, error) {
	var uc UserConfig
	err := s.ops.Do(ctx, func(sess coord.Session) (err error) {
		uc, err = readUser(ctx, sess, user)
		return err
	})
	return uc, err
}

// Users reads the config of every user that has a node.
func (s *CredentialStore) Users(ctx context.Context) (map[string]map[string]string, error) {
	var all map[string]map[string]string
	err := s.ops.Do(ctx, func(sess coord.Session) (err error) {
		all, err = readAllUsers(ctx, sess)
		return err
	})
	return all, err
}

// UpdateUser reads user's config, lets edit change it (an error from edit
// is returned as is and nothing is written) and writes it back with a
// compare-and-set, then the change notification every broker follows
// (entityconfig.Update). Keys edit leaves alone (a user's quotas) are
// kept.
func (s *CredentialStore) UpdateUser(ctx context.Context, user string, edit func(cfg map[string]string) error) error {
	return s.ops.Do(ctx, func(sess coord.Session) error {
		_, err := entityconfig.Update(ctx, sess, userEntity(user), false, edit)
		if errors.Is(err, entityconfig.ErrMalformed) {
			err = fmt.Errorf("%w: %w", ErrMalformedCredential, err)
		}
		if err != nil {
			return fmt.Errorf("sasl: updating user %q: %w", user, err)
		}
		return nil
	})
}
