package partset

import (
	"context"
	"sync"
)

// Hooks are what a coordinator does with its partitions' contents.
type Hooks[L comparable, C any] struct {
	// New returns the contents of p, about to load; p is not yet visible
	// to anyone else. If a concurrent Load of the same log at the same
	// epoch wins the race, p is dropped unseen: neither Load nor Unload
	// is called for it.
	New func(p *Partition[L, C]) C
	// Load reads p's log back into p.Contents, in a goroutine of its own
	// (see the package doc for marking p loaded and for errors).
	Load func(p *Partition[L, C]) error
	// Unload drops p.Contents, once p has left the set.
	Unload func(p *Partition[L, C])
}

// Set is the partitions of one internal topic a coordinator serves,
// loading or loaded.
type Set[L comparable, C any] struct {
	hooks Hooks[L, C]

	mu    sync.Mutex
	parts map[int32]*Partition[L, C]
	// changed is closed and replaced (under mu) whenever a partition
	// joins the set, is loaded or leaves, for AwaitLoaded.
	changed chan struct{}

	loads sync.WaitGroup
}

// Partition is one partition served, from one Load until it leaves the
// set. Index, Log, Epoch and Contents are set before it is visible and
// never change.
type Partition[L comparable, C any] struct {
	Index int32
	Log   L
	// Epoch is the leader epoch it was loaded at (the transaction
	// coordinator's coordinator epoch); 0 where unused.
	Epoch    int32
	Contents C

	set    *Set[L, C]
	ctx    context.Context
	cancel context.CancelFunc
	// loaded is closed (under set.mu) once the partition is loaded.
	loaded chan struct{}
}

// New returns a set serving no partition.
func New[L comparable, C any](hooks Hooks[L, C]) *Set[L, C] {
	return &Set[L, C]{hooks: hooks, parts: map[int32]*Partition[L, C]{}, changed: make(chan struct{})}
}

// Load serves partition index from log, read back at epoch. Loading the
// log already served at the same epoch is a no-op; otherwise the partition
// served at index (if any) is unloaded and a new one starts loading.
func (s *Set[L, C]) Load(index int32, log L, epoch int32) {
	s.mu.Lock()
	loaded := s.isServingLocked(index, log, epoch)
	s.mu.Unlock()
	if loaded {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Partition[L, C]{Index: index, Log: log, Epoch: epoch, set: s, ctx: ctx, cancel: cancel, loaded: make(chan struct{})}
	p.Contents = s.hooks.New(p)
	s.mu.Lock()
	if s.isServingLocked(index, log, epoch) { // another Load won meanwhile
		s.mu.Unlock()
		cancel()
		return
	}
	old := s.parts[index]
	if old != nil {
		s.removeLocked(old)
	}
	s.parts[index] = p
	s.notifyLocked()
	s.loads.Add(1)
	s.mu.Unlock()
	if old != nil {
		s.hooks.Unload(old)
	}
	go s.load(p)
}

func (s *Set[L, C]) isServingLocked(index int32, log L, epoch int32) bool {
	cur := s.parts[index]
	return cur != nil && cur.Log == log && cur.Epoch == epoch
}

func (s *Set[L, C]) load(p *Partition[L, C]) {
	defer s.loads.Done()
	if err := s.hooks.Load(p); err != nil {
		s.unload(p)
		return
	}
	p.MarkLoaded()
}

// Unload stops serving partition index, if it is served.
func (s *Set[L, C]) Unload(index int32) {
	s.mu.Lock()
	p := s.parts[index]
	s.mu.Unlock()
	if p != nil {
		s.unload(p)
	}
}

// unload removes p if it is still the partition served at its index.
func (s *Set[L, C]) unload(p *Partition[L, C]) {
	s.mu.Lock()
	if s.parts[p.Index] != p {
		s.mu.Unlock()
		return
	}
	s.removeLocked(p)
	s.mu.Unlock()
	s.hooks.Unload(p)
}

// Close unloads every partition. Loads in flight may still be running:
// Wait waits for them.
func (s *Set[L, C]) Close() {
	s.mu.Lock()
	gone := make([]*Partition[L, C], 0, len(s.parts))
	for _, p := range s.parts {
		s.removeLocked(p)
		gone = append(gone, p)
	}
	s.mu.Unlock()
	for _, p := range gone {
		s.hooks.Unload(p)
	}
}

// Wait waits until the Load hooks started so far have returned.
func (s *Set[L, C]) Wait() { s.loads.Wait() }

func (s *Set[L, C]) removeLocked(p *Partition[L, C]) {
	delete(s.parts, p.Index)
	p.cancel()
	s.notifyLocked()
}

func (s *Set[L, C]) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Get returns the partition served at index, loading or loaded, or nil.
func (s *Set[L, C]) Get(index int32) *Partition[L, C] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.parts[index]
}

// Partitions returns the partitions served, loading or loaded, in no
// particular order.
func (s *Set[L, C]) Partitions() []*Partition[L, C] {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Partition[L, C], 0, len(s.parts))
	for _, p := range s.parts {
		out = append(out, p)
	}
	return out
}

// Serving returns the logs of the partitions served, loading or loaded.
func (s *Set[L, C]) Serving() map[int32]L {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int32]L, len(s.parts))
	for i, p := range s.parts {
		out[i] = p.Log
	}
	return out
}

// Loaded reports whether partition index is served and loaded.
func (s *Set[L, C]) Loaded(index int32) bool {
	p := s.Get(index)
	return p != nil && p.Loaded()
}

// AwaitLoaded waits until partition index is served and loaded; it
// returns ctx's error if ctx ends first. An Unload meanwhile does not end
// the wait.
func (s *Set[L, C]) AwaitLoaded(ctx context.Context, index int32) error {
	for {
		s.mu.Lock()
		p, changed := s.parts[index], s.changed
		s.mu.Unlock()
		if p != nil && p.Loaded() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Loaded reports whether p was marked loaded (it may have left the set
// since: see Served).
func (p *Partition[L, C]) Loaded() bool {
	select {
	case <-p.loaded:
		return true
	default:
		return false
	}
}

// Served reports whether p is still the partition served at its index.
func (p *Partition[L, C]) Served() bool {
	p.set.mu.Lock()
	defer p.set.mu.Unlock()
	return p.set.parts[p.Index] == p
}

// MarkLoaded marks p loaded and wakes its waiters; it reports false, and
// marks nothing, if p has left the set (a stale load). Marking it again
// is a no-op.
func (p *Partition[L, C]) MarkLoaded() bool {
	s := p.set
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parts[p.Index] != p {
		return false
	}
	if !p.Loaded() {
		close(p.loaded)
		s.notifyLocked()
	}
	return true
}

// Context ends when p leaves the set; work for p (the transaction
// coordinator's marker writes) stops with it.
func (p *Partition[L, C]) Context() context.Context { return p.ctx }
