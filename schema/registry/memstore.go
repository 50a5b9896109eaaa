package registry

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// MemStore is a Store in process memory: for `tributary registry` without
// ZooKeeper, `tributary dev` and tests. Nothing survives the process.
type MemStore struct {
	mu            sync.Mutex
	closed        bool
	schemas       map[int]SchemaRecord
	byFingerprint map[string]int
	nextID        int
	subjects      map[string]map[int]VersionRecord
	levels        map[string]Level
	modes         map[string]Mode
}

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore {
	return &MemStore{
		schemas:       map[int]SchemaRecord{},
		byFingerprint: map[string]int{},
		nextID:        1,
		subjects:      map[string]map[int]VersionRecord{},
		levels:        map[string]Level{},
		modes:         map[string]Mode{},
	}
}

var _ Store = (*MemStore)(nil)

func (m *MemStore) lock() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	return nil
}

func (m *MemStore) PutSchema(_ context.Context, rec SchemaRecord) (int, error) {
	if err := m.lock(); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	if id, ok := m.byFingerprint[rec.Fingerprint]; ok {
		return id, nil
	}
	rec.ID = m.nextID
	m.nextID++
	m.schemas[rec.ID] = rec
	m.byFingerprint[rec.Fingerprint] = rec.ID
	return rec.ID, nil
}

func (m *MemStore) ImportSchema(_ context.Context, rec SchemaRecord) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if old, ok := m.schemas[rec.ID]; ok {
		if old.Fingerprint == rec.Fingerprint {
			return nil
		}
		return fmt.Errorf("%w: id %d", ErrIDTaken, rec.ID)
	}
	m.schemas[rec.ID] = rec
	// As in the coordination store: new ids continue after imported ones.
	m.nextID = max(m.nextID, rec.ID+1)
	if _, ok := m.byFingerprint[rec.Fingerprint]; !ok {
		m.byFingerprint[rec.Fingerprint] = rec.ID
	}
	return nil
}

func (m *MemStore) Schema(_ context.Context, id int) (SchemaRecord, error) {
	if err := m.lock(); err != nil {
		return SchemaRecord{}, err
	}
	defer m.mu.Unlock()
	rec, ok := m.schemas[id]
	if !ok {
		return SchemaRecord{}, fmt.Errorf("%w: id %d", ErrSchemaNotFound, id)
	}
	return rec, nil
}

func (m *MemStore) Subjects(context.Context) ([]string, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.subjects))
	for s := range m.subjects {
		out = append(out, s)
	}
	sort.Strings(out)
	return out, nil
}

func (m *MemStore) Versions(_ context.Context, subject string) ([]VersionRecord, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	vs, ok := m.subjects[subject]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrSubjectNotFound, subject)
	}
	out := make([]VersionRecord, 0, len(vs))
	for _, v := range vs {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b VersionRecord) int { return a.Version - b.Version })
	return out, nil
}

func (m *MemStore) CreateVersion(_ context.Context, subject string, version, id int) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	vs, ok := m.subjects[subject]
	if !ok {
		vs = map[int]VersionRecord{}
		m.subjects[subject] = vs
	}
	if _, taken := vs[version]; taken {
		return fmt.Errorf("%w: %q version %d", ErrVersionExists, subject, version)
	}
	vs[version] = VersionRecord{Version: version, ID: id}
	return nil
}

func (m *MemStore) MarkDeleted(_ context.Context, subject string, version int) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	v, ok := m.subjects[subject][version]
	if !ok {
		return fmt.Errorf("%w: %q version %d", ErrVersionNotFound, subject, version)
	}
	v.Deleted = true
	m.subjects[subject][version] = v
	return nil
}

func (m *MemStore) DeleteVersion(_ context.Context, subject string, version int) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	vs := m.subjects[subject]
	if _, ok := vs[version]; !ok {
		return fmt.Errorf("%w: %q version %d", ErrVersionNotFound, subject, version)
	}
	delete(vs, version)
	if len(vs) == 0 {
		delete(m.subjects, subject)
	}
	return nil
}

func (m *MemStore) Compatibility(_ context.Context, subject string) (Level, error) {
	if err := m.lock(); err != nil {
		return "", err
	}
	defer m.mu.Unlock()
	l, ok := m.levels[subject]
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrConfigNotFound, subject)
	}
	return l, nil
}

func (m *MemStore) SetCompatibility(_ context.Context, subject string, level Level) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.levels[subject] = level
	return nil
}

func (m *MemStore) DeleteCompatibility(_ context.Context, subject string) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if _, ok := m.levels[subject]; !ok {
		return fmt.Errorf("%w: %q", ErrConfigNotFound, subject)
	}
	delete(m.levels, subject)
	return nil
}

func (m *MemStore) Mode(_ context.Context, subject string) (Mode, error) {
	if err := m.lock(); err != nil {
		return "", err
	}
	defer m.mu.Unlock()
	md, ok := m.modes[subject]
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrModeNotFound, subject)
	}
	return md, nil
}

func (m *MemStore) SetMode(_ context.Context, subject string, mode Mode) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.modes[subject] = mode
	return nil
}

func (m *MemStore) DeleteMode(_ context.Context, subject string) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if _, ok := m.modes[subject]; !ok {
		return fmt.Errorf("%w: %q", ErrModeNotFound, subject)
	}
	delete(m.modes, subject)
	return nil
}

func (m *MemStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
