package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// The ZooKeeper layout of the registry, under the session's chroot. Frozen:
// every registry process of a cluster reads it.
const (
	// RootPath holds everything the registry stores.
	RootPath = "/schema_registry"

	idCounterNode    = "id_counter"   // decimal last id handed out
	schemasNode      = "schemas"      // schemas/<id>: SchemaRecord JSON, immutable
	fingerprintsNode = "fingerprints" // fingerprints/<sha256>: decimal id
	subjectsNode     = "subjects"     // subjects/<subject>/versions/<n>: coordVersion JSON
	versionsNode     = "versions"
	configNode       = "config" // config: global level JSON; config/<subject>: subject level JSON
	modeNode         = "mode"   // mode: global mode JSON; mode/<subject>: subject mode JSON
)

// coordVersion is the JSON of a version node.
type coordVersion struct {
	ID      int  `json:"id"`
	Deleted bool `json:"deleted"`
}

// coordMode is the JSON of a mode node.
type coordMode struct {
	Mode Mode `json:"mode"`
}

// coordLevel is the JSON of a config node.
type coordLevel struct {
	Compatibility Level `json:"compatibilityLevel"`
}

// CoordConfig configures a CoordStore. The zero value is valid.
type CoordConfig struct {
	// Logger receives cache refresh failures; nil discards.
	Logger *slog.Logger
	// RetryBackoff is the pause before a failed cache refresh is retried;
	// 0 means 200ms.
	RetryBackoff time.Duration
}

// Validate checks the configuration.
func (c CoordConfig) Validate() error {
	if c.RetryBackoff < 0 {
		return fmt.Errorf("registry coord config: RetryBackoff %v is negative", c.RetryBackoff)
	}
	return nil
}

// CoordStore is a Store in the coordination service (ZooKeeper in
// production), shared by any number of registry processes. See doc.go for
// the layout and the cache.
type CoordStore struct {
	sess    coord.Session
	root    string
	log     *slog.Logger
	backoff time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	queue  chan refresh

	mu       sync.RWMutex
	lost     bool // the session ended: nothing is served any more
	schemas  map[int]SchemaRecord
	subjects map[string]*subjectState
	// listArmed: a ChildrenW on subjects/ is pending.
	listArmed bool
}

// subjectState is the cached view of one subject.
type subjectState struct {
	versions []VersionRecord // ascending
	// created, dataVersion and childVersion order two reads of one subject:
	// a read never replaces a newer one.
	created      time.Time
	dataVersion  int32
	childVersion int32
	// dataArmed, childArmed: a GetW on the subject node, a ChildrenW on
	// its versions node, is pending.
	dataArmed, childArmed bool
}

func (s *subjectState) newerThan(o *subjectState) bool {
	if !s.created.Equal(o.created) {
		return s.created.After(o.created)
	}
	return s.childVersion >= o.childVersion && s.dataVersion >= o.dataVersion
}

type refreshKind int

const (
	refreshList refreshKind = iota + 1
	refreshSubjectData
	refreshSubjectChildren
	refreshRetry
)

type refresh struct {
	kind    refreshKind
	subject string
}

// NewCoordStore creates the layout if missing, loads the cache and starts
// the watch loop. The session stays the caller's: Close does not close it.
func NewCoordStore(ctx context.Context, sess coord.Session, cfg CoordConfig) (*CoordStore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = 200 * time.Millisecond
	}
	s := &CoordStore{
		sess:     sess,
		root:     RootPath,
		log:      cfg.Logger,
		backoff:  cfg.RetryBackoff,
		queue:    make(chan refresh, 1024),
		schemas:  map[int]SchemaRecord{},
		subjects: map[string]*subjectState{},
	}
	for _, p := range []string{s.path(schemasNode), s.path(fingerprintsNode), s.path(subjectsNode), s.path(configNode), s.path(modeNode)} {
		if err := s.ensure(ctx, p, nil); err != nil {
			return nil, err
		}
	}
	if err := s.ensure(ctx, s.path(idCounterNode), []byte("0")); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.refreshList(ctx); err != nil {
		s.cancel()
		s.wg.Wait()
		return nil, err
	}
	s.wg.Add(1)
	go s.loop()
	return s, nil
}

var _ Store = (*CoordStore)(nil)

func (s *CoordStore) ensure(ctx context.Context, p string, data []byte) error {
	_, err := s.sess.CreateAll(ctx, p, data, coord.Persistent)
	if err != nil && !errors.Is(err, coord.ErrNodeExists) {
		return storeErr("create "+p, err)
	}
	return nil
}

func (s *CoordStore) path(names ...string) string { return coord.Join(s.root, names...) }

func (s *CoordStore) subjectPath(subject string, names ...string) string {
	return s.path(append([]string{subjectsNode, escapeName(subject)}, names...)...)
}

// escapeName makes a subject a single valid node name: Confluent subjects
// may hold "/" and any character, ZooKeeper names may not.
func escapeName(name string) string {
	e := url.PathEscape(name)
	e = strings.ReplaceAll(e, "/", "%2F") // PathEscape keeps none, but be explicit
	if e == "" || strings.Trim(e, ".") == "" {
		e = strings.ReplaceAll(e, ".", "%2E")
	}
	return e
}

func unescapeName(e string) (string, error) { return url.PathUnescape(e) }

// storeErr classifies a coordination failure as ErrStore, keeping the cause.
func storeErr(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrStore, op, err)
}

func (s *CoordStore) checkLive() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.lost {
		return fmt.Errorf("%w: coordination session lost", ErrStore)
	}
	if s.ctx.Err() != nil {
		return ErrClosed
	}
	return nil
}

// PutSchema: the fingerprint node decides which id wins. An id allocated
// by a loser is never used (ids may have gaps, as in Confluent).
func (s *CoordStore) PutSchema(ctx context.Context, rec SchemaRecord) (int, error) {
	if err := s.checkLive(); err != nil {
		return 0, err
	}
	fpPath := s.path(fingerprintsNode, rec.Fingerprint)
	if id, err := s.readID(ctx, fpPath); err == nil {
		return id, nil
	} else if !errors.Is(err, coord.ErrNoNode) {
		return 0, storeErr("read fingerprint", err)
	}
	for {
		id, err := s.nextID(ctx)
		if err != nil {
			return 0, err
		}
		rec.ID = id
		body, err := json.Marshal(rec)
		if err != nil {
			return 0, err
		}
		err = s.sess.Multi(ctx,
			coord.Op{Kind: coord.OpCreate, Path: s.path(schemasNode, strconv.Itoa(id)), Data: body, Mode: coord.Persistent},
			coord.Op{Kind: coord.OpCreate, Path: fpPath, Data: []byte(strconv.Itoa(id)), Mode: coord.Persistent},
		)
		if errors.Is(err, coord.ErrNodeExists) {
			winner, rerr := s.readID(ctx, fpPath)
			if errors.Is(rerr, coord.ErrNoNode) {
				continue // the id was imported meanwhile: take the next
			}
			if rerr != nil {
				return 0, storeErr("read fingerprint", rerr)
			}
			return winner, nil
		}
		if err != nil {
			return 0, storeErr("store schema", err)
		}
		s.mu.Lock()
		s.schemas[id] = rec
		s.mu.Unlock()
		return id, nil
	}
}

// ImportSchema raises the counter to the id first, so that PutSchema never
// hands it out, then creates the schema node; the fingerprint node keeps
// the first id a schema got.
func (s *CoordStore) ImportSchema(ctx context.Context, rec SchemaRecord) error {
	if err := s.checkLive(); err != nil {
		return err
	}
	if err := s.raiseCounter(ctx, rec.ID); err != nil {
		return err
	}
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = s.sess.Create(ctx, s.path(schemasNode, strconv.Itoa(rec.ID)), body, coord.Persistent)
	if errors.Is(err, coord.ErrNodeExists) {
		old, rerr := s.Schema(ctx, rec.ID)
		if rerr != nil {
			return rerr
		}
		if old.Fingerprint != rec.Fingerprint {
			return fmt.Errorf("%w: id %d", ErrIDTaken, rec.ID)
		}
		return nil
	}
	if err != nil {
		return storeErr("import schema", err)
	}
	_, err = s.sess.Create(ctx, s.path(fingerprintsNode, rec.Fingerprint), []byte(strconv.Itoa(rec.ID)), coord.Persistent)
	if err != nil && !errors.Is(err, coord.ErrNodeExists) {
		return storeErr("import fingerprint", err)
	}
	s.mu.Lock()
	s.schemas[rec.ID] = rec
	s.mu.Unlock()
	return nil
}

// raiseCounter sets the id counter to at least id (compare-and-set).
func (s *CoordStore) raiseCounter(ctx context.Context, id int) error {
	p := s.path(idCounterNode)
	for {
		data, stat, err := s.sess.Get(ctx, p)
		if err != nil {
			return storeErr("read id counter", err)
		}
		last, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			return fmt.Errorf("%w: id counter holds %q", ErrStore, data)
		}
		if last >= id {
			return nil
		}
		_, err = s.sess.Set(ctx, p, []byte(strconv.Itoa(id)), stat.Version)
		if errors.Is(err, coord.ErrBadVersion) {
			continue
		}
		if err != nil {
			return storeErr("raise id counter", err)
		}
		return nil
	}
}

func (s *CoordStore) readID(ctx context.Context, p string) (int, error) {
	data, _, err := s.sess.Get(ctx, p)
	if err != nil {
		return 0, err
	}
	id, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("%w: %s holds %q", ErrStore, p, data)
	}
	return id, nil
}

// nextID increments the counter with compare-and-set, so that processes
// racing for ids each get a different one.
func (s *CoordStore) nextID(ctx context.Context) (int, error) {
	p := s.path(idCounterNode)
	for {
		data, stat, err := s.sess.Get(ctx, p)
		if err != nil {
			return 0, storeErr("read id counter", err)
		}
		last, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			return 0, fmt.Errorf("%w: id counter holds %q", ErrStore, data)
		}
		_, err = s.sess.Set(ctx, p, []byte(strconv.Itoa(last+1)), stat.Version)
		if errors.Is(err, coord.ErrBadVersion) {
			continue
		}
		if err != nil {
			return 0, storeErr("increment id counter", err)
		}
		return last + 1, nil
	}
}

// Schema serves from the cache; a miss reads the node and caches it for
// good, since an id never changes its schema.
func (s *CoordStore) Schema(ctx context.Context, id int) (SchemaRecord, error) {
	if err := s.checkLive(); err != nil {
		return SchemaRecord{}, err
	}
	s.mu.RLock()
	rec, ok := s.schemas[id]
	s.mu.RUnlock()
	if ok {
		return rec, nil
	}
	data, _, err := s.sess.Get(ctx, s.path(schemasNode, strconv.Itoa(id)))
	if errors.Is(err, coord.ErrNoNode) {
		return SchemaRecord{}, fmt.Errorf("%w: id %d", ErrSchemaNotFound, id)
	}
	if err != nil {
		return SchemaRecord{}, storeErr("read schema", err)
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return SchemaRecord{}, fmt.Errorf("%w: schema %d: %v", ErrStore, id, err)
	}
	rec.ID = id
	s.mu.Lock()
	s.schemas[id] = rec
	s.mu.Unlock()
	return rec, nil
}

func (s *CoordStore) Subjects(context.Context) ([]string, error) {
	if err := s.checkLive(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.subjects))
	for name, st := range s.subjects {
		if len(st.versions) > 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (s *CoordStore) Versions(_ context.Context, subject string) ([]VersionRecord, error) {
	if err := s.checkLive(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, ok := s.subjects[subject]
	if !ok || len(st.versions) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrSubjectNotFound, subject)
	}
	return slices.Clone(st.versions), nil
}

func (s *CoordStore) CreateVersion(ctx context.Context, subject string, version, id int) error {
	if err := s.checkLive(); err != nil {
		return err
	}
	body, _ := json.Marshal(coordVersion{ID: id})
	p := s.subjectPath(subject, versionsNode, strconv.Itoa(version))
	_, err := s.sess.Create(ctx, p, body, coord.Persistent)
	if errors.Is(err, coord.ErrNoNode) {
		// A new subject: its node, versions node and first version appear
		// together, so no cache ever reads a subject without versions.
		err = s.sess.Multi(ctx,
			coord.Op{Kind: coord.OpCreate, Path: s.subjectPath(subject), Mode: coord.Persistent},
			coord.Op{Kind: coord.OpCreate, Path: s.subjectPath(subject, versionsNode), Mode: coord.Persistent},
			coord.Op{Kind: coord.OpCreate, Path: p, Data: body, Mode: coord.Persistent},
		)
		if errors.Is(err, coord.ErrNodeExists) || errors.Is(err, coord.ErrNoNode) {
			// Half there (another writer) or the layout is gone: create
			// what is missing step by step.
			_, err = s.sess.CreateAll(ctx, p, body, coord.Persistent)
		}
	}
	if errors.Is(err, coord.ErrNodeExists) {
		// The cache was behind: bring it up to date so the retry sees the winner.
		if rerr := s.refreshSubject(ctx, subject, false, false); rerr != nil {
			return rerr
		}
		return fmt.Errorf("%w: %q version %d", ErrVersionExists, subject, version)
	}
	if err != nil {
		return storeErr("create version", err)
	}
	return s.refreshSubject(ctx, subject, false, false)
}

func (s *CoordStore) MarkDeleted(ctx context.Context, subject string, version int) error {
	if err := s.checkLive(); err != nil {
		return err
	}
	p := s.subjectPath(subject, versionsNode, strconv.Itoa(version))
	data, stat, err := s.sess.Get(ctx, p)
	if errors.Is(err, coord.ErrNoNode) {
		return fmt.Errorf("%w: %q version %d", ErrVersionNotFound, subject, version)
	}
	if err != nil {
		return storeErr("read version", err)
	}
	var v coordVersion
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrStore, p, err)
	}
	v.Deleted = true
	body, _ := json.Marshal(v)
	// Touching the subject node tells other processes' caches (a data watch
	// per subject) that a version's flag changed, without a watch per version.
	err = s.sess.Multi(ctx,
		coord.Op{Kind: coord.OpSet, Path: p, Data: body, Version: stat.Version},
		coord.Op{Kind: coord.OpSet, Path: s.subjectPath(subject), Data: nil, Version: coord.AnyVersion},
	)
	if err != nil {
		return storeErr("mark version deleted", err)
	}
	return s.refreshSubject(ctx, subject, false, false)
}

func (s *CoordStore) DeleteVersion(ctx context.Context, subject string, version int) error {
	if err := s.checkLive(); err != nil {
		return err
	}
	err := s.sess.Delete(ctx, s.subjectPath(subject, versionsNode, strconv.Itoa(version)), coord.AnyVersion)
	if errors.Is(err, coord.ErrNoNode) {
		return fmt.Errorf("%w: %q version %d", ErrVersionNotFound, subject, version)
	}
	if err != nil {
		return storeErr("delete version", err)
	}
	left, _, err := s.sess.Children(ctx, s.subjectPath(subject, versionsNode))
	if err == nil && len(left) == 0 {
		// A racing CreateVersion makes this fail with ErrNotEmpty, and
		// then the subject rightly stays.
		err = s.sess.Multi(ctx,
			coord.Op{Kind: coord.OpDelete, Path: s.subjectPath(subject, versionsNode), Version: coord.AnyVersion},
			coord.Op{Kind: coord.OpDelete, Path: s.subjectPath(subject), Version: coord.AnyVersion},
		)
		if err != nil && !errors.Is(err, coord.ErrNotEmpty) && !errors.Is(err, coord.ErrNoNode) {
			return storeErr("delete subject", err)
		}
	}
	return s.refreshSubject(ctx, subject, false, false)
}

func (s *CoordStore) configPath(subject string) string {
	if subject == "" {
		return s.path(configNode)
	}
	return s.path(configNode, escapeName(subject))
}

// Compatibility reads the coordination service directly: levels are read
// once per registration, and a level change must hold at once everywhere.
func (s *CoordStore) Compatibility(ctx context.Context, subject string) (Level, error) {
	if err := s.checkLive(); err != nil {
		return "", err
	}
	data, _, err := s.sess.Get(ctx, s.configPath(subject))
	if errors.Is(err, coord.ErrNoNode) || (err == nil && len(data) == 0) {
		return "", fmt.Errorf("%w: %q", ErrConfigNotFound, subject)
	}
	if err != nil {
		return "", storeErr("read config", err)
	}
	var c coordLevel
	if err := json.Unmarshal(data, &c); err != nil {
		return "", fmt.Errorf("%w: config %q: %v", ErrStore, subject, err)
	}
	return c.Compatibility, nil
}

func (s *CoordStore) SetCompatibility(ctx context.Context, subject string, level Level) error {
	if err := s.checkLive(); err != nil {
		return err
	}
	body, _ := json.Marshal(coordLevel{Compatibility: level})
	p := s.configPath(subject)
	_, err := s.sess.Set(ctx, p, body, coord.AnyVersion)
	if errors.Is(err, coord.ErrNoNode) {
		_, err = s.sess.CreateAll(ctx, p, body, coord.Persistent)
		if errors.Is(err, coord.ErrNodeExists) {
			_, err = s.sess.Set(ctx, p, body, coord.AnyVersion)
		}
	}
	if err != nil {
		return storeErr("write config", err)
	}
	return nil
}

func (s *CoordStore) DeleteCompatibility(ctx context.Context, subject string) error {
	if err := s.checkLive(); err != nil {
		return err
	}
	var err error
	if subject == "" {
		if _, err = s.Compatibility(ctx, ""); err != nil {
			return err
		}
		_, err = s.sess.Set(ctx, s.configPath(""), nil, coord.AnyVersion)
	} else {
		err = s.sess.Delete(ctx, s.configPath(subject), coord.AnyVersion)
	}
	if errors.Is(err, coord.ErrNoNode) {
		return fmt.Errorf("%w: %q", ErrConfigNotFound, subject)
	}
	if err != nil {
		return storeErr("delete config", err)
	}
	return nil
}

func (s *CoordStore) modePath(subject string) string {
	if subject == "" {
		return s.path(modeNode)
	}
	return s.path(modeNode, escapeName(subject))
}

// Mode, like Compatibility, reads the tree on every call: a READONLY set by
// one process must stop registrations in all of them at once.
func (s *CoordStore) Mode(ctx context.Context, subject string) (Mode, error) {
	if err := s.checkLive(); err != nil {
		return "", err
	}
	data, _, err := s.sess.Get(ctx, s.modePath(subject))
	if errors.Is(err, coord.ErrNoNode) || (err == nil && len(data) == 0) {
		return "", fmt.Errorf("%w: %q", ErrModeNotFound, subject)
	}
	if err != nil {
		return "", storeErr("read mode", err)
	}
	var m coordMode
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("%w: mode %q: %v", ErrStore, subject, err)
	}
	return m.Mode, nil
}

func (s *CoordStore) SetMode(ctx context.Context, subject string, mode Mode) error {
	if err := s.checkLive(); err != nil {
		return err
	}
	body, _ := json.Marshal(coordMode{Mode: mode})
	return s.setNode(ctx, s.modePath(subject), body, "write mode")
}

func (s *CoordStore) DeleteMode(ctx context.Context, subject string) error {
	if err := s.checkLive(); err != nil {
		return err
	}
	var err error
	if subject == "" {
		if _, err = s.Mode(ctx, ""); err != nil {
			return err
		}
		_, err = s.sess.Set(ctx, s.modePath(""), nil, coord.AnyVersion)
	} else {
		err = s.sess.Delete(ctx, s.modePath(subject), coord.AnyVersion)
	}
	if errors.Is(err, coord.ErrNoNode) {
		return fmt.Errorf("%w: %q", ErrModeNotFound, subject)
	}
	if err != nil {
		return storeErr("delete mode", err)
	}
	return nil
}

// setNode writes data to p, creating it if missing.
func (s *CoordStore) setNode(ctx context.Context, p string, data []byte, op string) error {
	_, err := s.sess.Set(ctx, p, data, coord.AnyVersion)
	if errors.Is(err, coord.ErrNoNode) {
		_, err = s.sess.CreateAll(ctx, p, data, coord.Persistent)
		if errors.Is(err, coord.ErrNodeExists) {
			_, err = s.sess.Set(ctx, p, data, coord.AnyVersion)
		}
	}
	if err != nil {
		return storeErr(op, err)
	}
	return nil
}

// Close stops the watch loop. The session is left open for its owner.
func (s *CoordStore) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}
