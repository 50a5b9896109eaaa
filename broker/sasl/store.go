package sasl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// Layout in the coordination service (frozen: Kafka's, so that Kafka's
// ConfigCommand and brokers read and write the same nodes).
const (
	usersPath         = "/config/users"
	configChangesPath = "/config/changes"
	changePrefix      = "config_change_"
	// userConfigVersion and changeVersion are the "version" fields Kafka
	// 2.8 writes in an entity config and in a change notification.
	userConfigVersion = 1
	changeVersion     = 2
)

// retryBackoff spaces reconnections after the store's session is lost.
const retryBackoff = 500 * time.Millisecond

// casAttempts bounds UpdateUser's compare-and-set retries.
const casAttempts = 10

// CredentialStore is the SCRAM credentials of every user, as Kafka keeps
// them in ZooKeeper (see doc.go), through a coord.Session: a cache that is
// loaded whole when a session starts and kept current by Kafka's change
// notifications, so Lookup never blocks; and the reads and writes of the
// admin APIs, which go to the coordination service. Safe for concurrent use.
type CredentialStore struct {
	connect func(context.Context) (coord.Session, error)
	log     *slog.Logger

	mu     sync.RWMutex
	creds  map[string]map[string]ScramCredential // user → mechanism → credential
	synced chan struct{}                         // closed at the first full load
	gen    uint64                                // counts applied changes
	change chan struct{}                         // closed and replaced at every change

	// ops is the session of the admin operations (UpdateUser, ReadUser, Users).
	ops *coord.Redialer

	cancel context.CancelFunc
	done   chan struct{}
}

// NewCredentialStore starts a store whose sessions come from connect; it
// runs until Close or until ctx ends. logger may be nil.
func NewCredentialStore(ctx context.Context, connect func(context.Context) (coord.Session, error), logger *slog.Logger) *CredentialStore {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &CredentialStore{connect: connect, log: logger, creds: map[string]map[string]ScramCredential{},
		synced: make(chan struct{}), change: make(chan struct{}), cancel: cancel, done: make(chan struct{}),
		ops: coord.NewRedialer(connect, ErrClosed)}
	go s.run(ctx)
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
	s.cancel()
	<-s.done
	return s.ops.Close()
}

func (s *CredentialStore) bump() {
	s.gen++
	close(s.change)
	s.change = make(chan struct{})
}

// run keeps the cache: a session at a time, reconnecting after a loss.
func (s *CredentialStore) run(ctx context.Context) {
	defer close(s.done)
	for ctx.Err() == nil {
		sess, err := s.connect(ctx)
		if err == nil {
			err = s.follow(ctx, sess)
			_ = sess.Close()
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("sasl: SCRAM credential cache lost its session; reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retryBackoff):
		}
	}
}

// follow arms the watch on /config/changes, loads every user, and then
// re-reads each user a notification names. Notifications older than the
// load are covered by it.
func (s *CredentialStore) follow(ctx context.Context, sess coord.Session) error {
	if _, err := sess.CreateAll(ctx, configChangesPath, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
		return fmt.Errorf("creating %s: %w", configChangesPath, err)
	}
	names, _, watch, err := sess.ChildrenW(ctx, configChangesPath)
	if err != nil {
		return err
	}
	last := maxChangeSeq(names, -1)
	all, err := readAllUsers(ctx, sess)
	if err != nil {
		return err
	}
	s.mu.Lock()
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
	s.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev := <-watch:
			if ev.Type == coord.EventSessionLost {
				return coord.ErrSessionExpired
			}
		}
		if names, _, watch, err = sess.ChildrenW(ctx, configChangesPath); err != nil {
			return err
		}
		slices.SortFunc(names, func(a, b string) int { return int(changeSeq(a) - changeSeq(b)) })
		for _, n := range names {
			seq := changeSeq(n)
			if seq <= last {
				continue
			}
			if err := s.apply(ctx, sess, n); err != nil {
				return err
			}
			last = seq
		}
	}
}

// apply re-reads the user a notification names; notifications of other
// entities (topics, clients, brokers) are not ours.
func (s *CredentialStore) apply(ctx context.Context, sess coord.Session, name string) error {
	data, _, err := sess.Get(ctx, coord.Join(configChangesPath, name))
	if errors.Is(err, coord.ErrNoNode) {
		return nil // purged already
	}
	if err != nil {
		return err
	}
	var n struct {
		Version    int    `json:"version"`
		EntityPath string `json:"entity_path"`
	}
	if json.Unmarshal(data, &n) != nil || n.Version != changeVersion {
		return nil // Kafka's brokers skip what they cannot read, too
	}
	node, ok := strings.CutPrefix(n.EntityPath, "users/")
	if !ok || node == "" || strings.Contains(node, "/") { // users/<u>/clients/<c> are quotas
		return nil
	}
	user, err := DesanitizeUser(node)
	if err != nil {
		s.log.Warn("sasl: ignoring a config change of an unreadable user node", "entity_path", n.EntityPath, "err", err)
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

// UserConfig is the entity config of one user: /config/users/<user>.
// Config holds every key, SCRAM credentials and quotas alike.
type UserConfig struct {
	User   string
	Config map[string]string
	// Version is the node's version, for UpdateUser's compare-and-set;
	// -1 when the node does not exist.
	Version int32
}

// userRecord is the JSON of /config/users/<user>.
type userRecord struct {
	Version int               `json:"version"`
	Config  map[string]string `json:"config"`
}

func userNode(user string) string { return coord.Join(usersPath, SanitizeUser(user)) }

// readUser reads a user's config; a missing node is an empty config.
func readUser(ctx context.Context, sess coord.Session, user string) (UserConfig, error) {
	data, st, err := sess.Get(ctx, userNode(user))
	if errors.Is(err, coord.ErrNoNode) {
		return UserConfig{User: user, Config: map[string]string{}, Version: -1}, nil
	}
	if err != nil {
		return UserConfig{}, err
	}
	var r userRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return UserConfig{User: user, Config: map[string]string{}, Version: st.Version},
			fmt.Errorf("%w: %s: %w", ErrMalformedCredential, userNode(user), err)
	}
	if r.Config == nil {
		r.Config = map[string]string{}
	}
	return UserConfig{User: user, Config: r.Config, Version: st.Version}, nil
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
// compare-and-set, then the change notification every broker follows, as
// Kafka's AdminZkClient.changeConfigs does. A concurrent write makes it
// read and edit again.
func (s *CredentialStore) UpdateUser(ctx context.Context, user string, edit func(cfg map[string]string) error) error {
	return s.ops.Do(ctx, func(sess coord.Session) error {
		for range casAttempts {
			uc, err := readUser(ctx, sess, user)
			if err != nil {
				return err
			}
			cfg := maps.Clone(uc.Config)
			if err := edit(cfg); err != nil {
				return err
			}
			data, _ := json.Marshal(userRecord{Version: userConfigVersion, Config: cfg})
			if uc.Version < 0 {
				_, err = sess.CreateAll(ctx, userNode(user), data, coord.Persistent)
			} else {
				_, err = sess.Set(ctx, userNode(user), data, uc.Version)
			}
			if errors.Is(err, coord.ErrNodeExists) || errors.Is(err, coord.ErrBadVersion) || errors.Is(err, coord.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			note, _ := json.Marshal(map[string]any{"version": changeVersion, "entity_path": "users/" + SanitizeUser(user)})
			if _, err := sess.CreateAll(ctx, coord.Join(configChangesPath, changePrefix), note, coord.PersistentSequential); err != nil {
				return fmt.Errorf("sasl: writing the change notification of user %q: %w", user, err)
			}
			return nil
		}
		return fmt.Errorf("sasl: user %q changed concurrently %d times: %w", user, casAttempts, coord.ErrBadVersion)
	})
}
