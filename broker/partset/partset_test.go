package partset

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// wait bounds every wait of these tests; none is a fixed sleep.
const wait = 30 * time.Second

// contents records what the hooks did to one partition.
type contents struct {
	mu        sync.Mutex
	installed bool
	unloaded  int
	// joined is set by the Load hook, which the set runs for every
	// partition that joined it; New's contents of a Load that lost a race
	// to an equal Load are dropped unseen (no Load, no Unload).
	joined bool
	// release, when not nil, holds the Load hook until closed.
	release chan struct{}
	err     error
}

// recorder is a coordinator's hooks that record every partition made.
type recorder struct {
	mu    sync.Mutex
	made  []*Partition[string, *contents]
	block bool  // new partitions' loads wait for their release
	err   error // new partitions' loads fail with it
}

func (r *recorder) hooks() Hooks[string, *contents] {
	return Hooks[string, *contents]{
		New: func(p *Partition[string, *contents]) *contents {
			r.mu.Lock()
			defer r.mu.Unlock()
			c := &contents{err: r.err}
			if r.block {
				c.release = make(chan struct{})
			}
			r.made = append(r.made, p)
			return c
		},
		Load: func(p *Partition[string, *contents]) error {
			c := p.Contents
			c.mu.Lock()
			c.joined = true
			c.mu.Unlock()
			if c.release != nil {
				<-c.release
			}
			if c.err != nil {
				return c.err
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if p.Served() {
				c.installed = true
			}
			return nil
		},
		Unload: func(p *Partition[string, *contents]) {
			c := p.Contents
			c.mu.Lock()
			c.unloaded++
			c.mu.Unlock()
		},
	}
}

func (r *recorder) partitions() []*Partition[string, *contents] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Partition[string, *contents](nil), r.made...)
}

func newSet(t *testing.T, r *recorder) *Set[string, *contents] {
	t.Helper()
	s := New(r.hooks())
	t.Cleanup(func() {
		s.Close()
		s.Wait()
		for _, p := range r.partitions() {
			p.Contents.mu.Lock()
			n, joined := p.Contents.unloaded, p.Contents.joined
			p.Contents.mu.Unlock()
			if !joined {
				if n != 0 || p.Served() {
					t.Errorf("partition %d (%s): never joined, yet served=%v unloaded %d times", p.Index, p.Log, p.Served(), n)
				}
				continue
			}
			if p.Contents.release != nil {
				select {
				case <-p.Contents.release:
				default:
					t.Errorf("partition %d (%s): load never released", p.Index, p.Log)
				}
			}
			if n != 1 {
				t.Errorf("partition %d (%s, epoch %d): Unload hook ran %d times, want once", p.Index, p.Log, p.Epoch, n)
			}
		}
	})
	return s
}

func awaitLoaded(t *testing.T, s *Set[string, *contents], index int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := s.AwaitLoaded(ctx, index); err != nil {
		t.Fatalf("partition %d not loaded: %v", index, err)
	}
}

func TestLoadServeUnload(t *testing.T) {
	r := &recorder{}
	s := newSet(t, r)
	s.Load(3, "log-a", 7)
	awaitLoaded(t, s, 3)
	if !s.Loaded(3) || s.Loaded(4) {
		t.Fatalf("Loaded(3)=%v Loaded(4)=%v, want true false", s.Loaded(3), s.Loaded(4))
	}
	p := s.Get(3)
	if p.Index != 3 || p.Log != "log-a" || p.Epoch != 7 || !p.Contents.installed || !p.Served() {
		t.Fatalf("partition %+v installed=%v served=%v", p, p.Contents.installed, p.Served())
	}
	if got := s.Serving(); len(got) != 1 || got[3] != "log-a" {
		t.Fatalf("Serving() = %v", got)
	}

	// The same log at the same epoch: a no-op (no new contents).
	s.Load(3, "log-a", 7)
	if n := len(r.partitions()); n != 1 || s.Get(3) != p {
		t.Fatalf("reloading the same log made %d partitions", n)
	}
	// Another epoch (or log) replaces it, the old one unloaded first.
	s.Load(3, "log-a", 8)
	if q := s.Get(3); q == p || q.Epoch != 8 {
		t.Fatalf("Load at a new epoch kept %+v", q)
	}
	if p.Served() || p.Context().Err() == nil || p.Contents.unloaded != 1 {
		t.Fatalf("replaced partition: served=%v ctx=%v unloaded=%d", p.Served(), p.Context().Err(), p.Contents.unloaded)
	}
	awaitLoaded(t, s, 3)

	q := s.Get(3)
	s.Unload(3)
	s.Unload(3) // not served: a no-op
	if s.Get(3) != nil || s.Loaded(3) || len(s.Serving()) != 0 || q.Served() || q.Context().Err() == nil {
		t.Fatalf("after Unload: get=%v loaded=%v serving=%v", s.Get(3), s.Loaded(3), s.Serving())
	}
	if !q.Loaded() {
		t.Fatal("a loaded partition forgot it was loaded when it left the set")
	}
}

// TestStaleLoadDoesNotInstall: a load overtaken by Unload, or by a Load
// of another log, installs nothing and marks nothing loaded.
func TestStaleLoadDoesNotInstall(t *testing.T) {
	for _, overtake := range []string{"unload", "newer load"} {
		t.Run(overtake, func(t *testing.T) {
			r := &recorder{block: true}
			s := newSet(t, r)
			s.Load(0, "old", 1)
			stale := s.Get(0)
			r.mu.Lock()
			r.block = false
			r.mu.Unlock()
			if overtake == "unload" {
				s.Unload(0)
			} else {
				s.Load(0, "new", 2)
				awaitLoaded(t, s, 0)
			}
			close(stale.Contents.release)
			s.Wait() // the stale load has returned
			if stale.Contents.unloaded != 1 {
				t.Fatalf("stale partition unloaded %d times", stale.Contents.unloaded)
			}
			if stale.Contents.installed || stale.Loaded() || stale.MarkLoaded() {
				t.Fatalf("stale load: installed=%v loaded=%v", stale.Contents.installed, stale.Loaded())
			}
			cur := s.Get(0)
			if overtake == "unload" && cur != nil {
				t.Fatalf("unloaded partition served again: %+v", cur)
			}
			if overtake == "newer load" && (cur == nil || cur.Log != "new" || !cur.Loaded() || !cur.Contents.installed) {
				t.Fatalf("newer load lost: %+v", cur)
			}
		})
	}
}

// TestFailedLoadUnloads: a Load hook's error takes the partition out of
// the set (the transaction coordinator's rule), but a stale load's error
// does not unload its successor.
func TestFailedLoadUnloads(t *testing.T) {
	boom := errors.New("replay failed")
	r := &recorder{err: boom}
	s := newSet(t, r)
	s.Load(1, "bad", 0)
	s.Wait()
	p := r.partitions()[0] // the set may have dropped it already
	if s.Get(1) != nil || p.Loaded() || p.Contents.unloaded != 1 || p.Context().Err() == nil {
		t.Fatalf("failed load still served: get=%v loaded=%v unloaded=%d", s.Get(1), p.Loaded(), p.Contents.unloaded)
	}

	r.mu.Lock()
	r.block = true
	r.mu.Unlock()
	s.Load(1, "bad-again", 0)
	stale := s.Get(1)
	r.mu.Lock()
	r.err, r.block = nil, false
	r.mu.Unlock()
	s.Load(1, "good", 0)
	awaitLoaded(t, s, 1)
	close(stale.Contents.release) // fails now, after being replaced
	s.Wait()
	if cur := s.Get(1); cur == nil || cur.Log != "good" || !cur.Loaded() {
		t.Fatalf("a stale load's failure unloaded its successor: %+v", cur)
	}
}

// TestAwaitLoaded: waiters are released by the load finishing; an Unload
// wakes them but does not end their wait (the partition may be loaded
// again); their context does, with its error.
func TestAwaitLoaded(t *testing.T) {
	r := &recorder{block: true}
	s := newSet(t, r)

	results := make(chan error, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bounded, cancelBounded := context.WithTimeout(context.Background(), wait)
	defer cancelBounded()
	go func() { results <- s.AwaitLoaded(ctx, 5) }()
	go func() { results <- s.AwaitLoaded(bounded, 5) }()
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	go func() { results <- s.AwaitLoaded(short, 5) }()

	s.Load(5, "first", 0)
	first := s.Get(5)
	if err := <-results; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiter with a deadline while loading: %v, want %v", err, context.DeadlineExceeded)
	}
	s.Unload(5)
	close(first.Contents.release)
	s.Wait()
	select {
	case err := <-results:
		t.Fatalf("Unload ended a wait: %v", err)
	default:
	}
	cancel()
	if err := <-results; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v, want %v", err, context.Canceled)
	}

	r.mu.Lock()
	r.block = false
	r.mu.Unlock()
	s.Load(5, "second", 0)
	if err := <-results; err != nil {
		t.Fatalf("waiter across an unload and a new load: %v", err)
	}
	if err := s.AwaitLoaded(context.Background(), 5); err != nil {
		t.Fatalf("AwaitLoaded on a loaded partition: %v", err)
	}
}

// TestMarkLoadedInHook: a Load hook may mark the partition loaded itself,
// under its own lock, and the set does not mark it again.
func TestMarkLoadedInHook(t *testing.T) {
	var mu sync.Mutex // the coordinator's lock, taken before the set's
	var marked []bool
	s := New(Hooks[string, int]{
		New: func(*Partition[string, int]) int { return 0 },
		Load: func(p *Partition[string, int]) error {
			mu.Lock()
			defer mu.Unlock()
			marked = append(marked, p.MarkLoaded(), p.MarkLoaded())
			return nil
		},
		Unload: func(*Partition[string, int]) { mu.Lock(); mu.Unlock() },
	})
	t.Cleanup(func() { s.Close(); s.Wait() })
	s.Load(0, "log", 0)
	s.Wait()
	mu.Lock()
	defer mu.Unlock()
	if !s.Loaded(0) || len(marked) != 2 || !marked[0] || !marked[1] {
		t.Fatalf("loaded=%v marks=%v", s.Loaded(0), marked)
	}
}

// TestConcurrentLoadUnload runs Load, Unload, AwaitLoaded and readers
// side by side (under -race): every partition made is unloaded exactly
// once (newSet's cleanup checks it), and none left in the set is stale.
func TestConcurrentLoadUnload(t *testing.T) {
	r := &recorder{}
	s := newSet(t, r)
	const workers, ops, indexes = 8, 300, 4
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 41))
			for range ops {
				i := int32(rnd.IntN(indexes))
				switch rnd.IntN(5) {
				case 0, 1:
					s.Load(i, fmt.Sprintf("log-%d", rnd.IntN(2)), int32(rnd.IntN(2)))
				case 2:
					s.Unload(i)
				case 3:
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					_ = s.AwaitLoaded(ctx, i)
					cancel()
				case 4:
					for _, p := range s.Partitions() {
						_, _ = p.Loaded(), p.Served()
					}
					_ = s.Serving()
				}
			}
		}()
	}
	wg.Wait()
	s.Wait()
	for _, p := range s.Partitions() {
		if s.Get(p.Index) != p || !p.Loaded() || !p.Contents.installed {
			t.Errorf("partition %d (%s): in set but loaded=%v installed=%v", p.Index, p.Log, p.Loaded(), p.Contents.installed)
		}
	}
	for _, p := range r.partitions() {
		p.Contents.mu.Lock()
		left, joined := p.Contents.unloaded, p.Contents.joined
		p.Contents.mu.Unlock()
		if joined && (p.Served() == (left == 1) || left > 1) {
			t.Errorf("partition %d (%s): served=%v, Unload hook ran %d times", p.Index, p.Log, p.Served(), left)
		}
	}
	t.Logf("%d partitions made", len(r.partitions()))
}
