package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// storeFactories are the Store implementations every store test runs on.
var storeFactories = []struct {
	name string
	new  func(t *testing.T) Store
}{
	{"mem", func(t *testing.T) Store { return newMemStore(t) }},
	{"coord", func(t *testing.T) Store { return newCoordStore(t, memcoord.NewServer()) }},
}

func newMemStore(t *testing.T) *MemStore {
	t.Helper()
	s := NewMemStore()
	t.Cleanup(func() { s.Close() })
	return s
}

// newCoordStore opens a session on srv and a CoordStore over it.
func newCoordStore(t *testing.T, srv *memcoord.Server) *CoordStore {
	t.Helper()
	sess := srv.Connect(memcoord.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := NewCoordStore(ctx, sess, CoordConfig{RetryBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("NewCoordStore: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		sess.Close()
	})
	return s
}

func forEachStore(t *testing.T, fn func(t *testing.T, s Store)) {
	for _, f := range storeFactories {
		t.Run(f.name, func(t *testing.T) { fn(t, f.new(t)) })
	}
}

func TestStoreSchemas(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := testenv.Context(t, 30*time.Second)
		id1, err := s.PutSchema(ctx, SchemaRecord{Schema: `"string"`, Type: "AVRO", Fingerprint: "fp1"})
		if err != nil {
			t.Fatal(err)
		}
		id2, err := s.PutSchema(ctx, SchemaRecord{Schema: `"long"`, Type: "AVRO", Fingerprint: "fp2"})
		if err != nil {
			t.Fatal(err)
		}
		again, err := s.PutSchema(ctx, SchemaRecord{Schema: ` "string" `, Type: "AVRO", Fingerprint: "fp1"})
		if err != nil {
			t.Fatal(err)
		}
		if id1 < 1 || id2 == id1 || again != id1 {
			t.Fatalf("ids %d, %d, again %d: want distinct positive ids and the first reused", id1, id2, again)
		}
		rec, err := s.Schema(ctx, id2)
		if err != nil {
			t.Fatal(err)
		}
		if rec.ID != id2 || rec.Schema != `"long"` || rec.Fingerprint != "fp2" || rec.Type != "AVRO" {
			t.Fatalf("Schema(%d) = %+v", id2, rec)
		}
		if _, err := s.Schema(ctx, 999); !errors.Is(err, ErrSchemaNotFound) {
			t.Fatalf("Schema(999) error = %v, want ErrSchemaNotFound", err)
		}
	})
}

func TestStoreConcurrentPutSchemaOneID(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := testenv.Context(t, 30*time.Second)
		const workers, schemas = 8, 20
		ids := make([][]int, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range schemas {
					id, err := s.PutSchema(ctx, SchemaRecord{Schema: fmt.Sprint(i), Type: "AVRO", Fingerprint: fmt.Sprint("fp", i)})
					if err != nil {
						t.Error(err)
						return
					}
					ids[w] = append(ids[w], id)
				}
			}()
		}
		wg.Wait()
		seen := map[int]int{}
		for i := range schemas {
			for w := range workers {
				if ids[w][i] != ids[0][i] {
					t.Fatalf("schema %d: worker %d got id %d, worker 0 got %d", i, w, ids[w][i], ids[0][i])
				}
			}
			if other, dup := seen[ids[0][i]]; dup {
				t.Fatalf("schemas %d and %d share id %d", other, i, ids[0][i])
			}
			seen[ids[0][i]] = i
		}
	})
}

func TestStoreVersions(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := testenv.Context(t, 30*time.Second)
		if _, err := s.Versions(ctx, "a/b"); !errors.Is(err, ErrSubjectNotFound) {
			t.Fatalf("Versions of a new subject: %v, want ErrSubjectNotFound", err)
		}
		for v, id := range map[int]int{1: 10, 2: 11, 3: 10} {
			if err := s.CreateVersion(ctx, "a/b", v, id); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateVersion(ctx, "a/b", 2, 12); !errors.Is(err, ErrVersionExists) {
			t.Fatalf("CreateVersion of a taken number: %v, want ErrVersionExists", err)
		}
		if err := s.CreateVersion(ctx, "..", 1, 10); err != nil {
			t.Fatalf("subject \"..\": %v", err)
		}
		want := []VersionRecord{{1, 10, false}, {2, 11, false}, {3, 10, false}}
		got, err := s.Versions(ctx, "a/b")
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("Versions = %v, %v; want %v", got, err, want)
		}
		if err := s.MarkDeleted(ctx, "a/b", 2); err != nil {
			t.Fatal(err)
		}
		want[1].Deleted = true
		if got, _ := s.Versions(ctx, "a/b"); !slices.Equal(got, want) {
			t.Fatalf("after MarkDeleted: %v, want %v", got, want)
		}
		if err := s.MarkDeleted(ctx, "a/b", 7); !errors.Is(err, ErrVersionNotFound) {
			t.Fatalf("MarkDeleted(7) = %v, want ErrVersionNotFound", err)
		}
		subjects, err := s.Subjects(ctx)
		if err != nil || !slices.Equal(subjects, []string{"..", "a/b"}) {
			t.Fatalf("Subjects = %v, %v", subjects, err)
		}
		for _, v := range []int{1, 2, 3} {
			if err := s.DeleteVersion(ctx, "a/b", v); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.DeleteVersion(ctx, "a/b", 1); !errors.Is(err, ErrVersionNotFound) {
			t.Fatalf("second DeleteVersion = %v, want ErrVersionNotFound", err)
		}
		if _, err := s.Versions(ctx, "a/b"); !errors.Is(err, ErrSubjectNotFound) {
			t.Fatalf("Versions after deleting all: %v, want ErrSubjectNotFound", err)
		}
		if subjects, _ := s.Subjects(ctx); !slices.Equal(subjects, []string{".."}) {
			t.Fatalf("Subjects after delete = %v", subjects)
		}
		// A subject comes back with fresh versions after a permanent delete.
		if err := s.CreateVersion(ctx, "a/b", 1, 42); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Versions(ctx, "a/b"); !slices.Equal(got, []VersionRecord{{1, 42, false}}) {
			t.Fatalf("recreated subject: %v", got)
		}
	})
}

func TestStoreCompatibility(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := testenv.Context(t, 30*time.Second)
		for _, subj := range []string{"", "x"} {
			if _, err := s.Compatibility(ctx, subj); !errors.Is(err, ErrConfigNotFound) {
				t.Fatalf("Compatibility(%q) unset: %v", subj, err)
			}
			if err := s.DeleteCompatibility(ctx, subj); !errors.Is(err, ErrConfigNotFound) {
				t.Fatalf("DeleteCompatibility(%q) unset: %v", subj, err)
			}
		}
		must(t, s.SetCompatibility(ctx, "", Full))
		must(t, s.SetCompatibility(ctx, "x", None))
		must(t, s.SetCompatibility(ctx, "x", Forward))
		if l, err := s.Compatibility(ctx, ""); l != Full || err != nil {
			t.Fatalf("global = %q, %v", l, err)
		}
		if l, err := s.Compatibility(ctx, "x"); l != Forward || err != nil {
			t.Fatalf("x = %q, %v", l, err)
		}
		must(t, s.DeleteCompatibility(ctx, "x"))
		must(t, s.DeleteCompatibility(ctx, ""))
		if _, err := s.Compatibility(ctx, "x"); !errors.Is(err, ErrConfigNotFound) {
			t.Fatalf("x after delete: %v", err)
		}
		if _, err := s.Compatibility(ctx, ""); !errors.Is(err, ErrConfigNotFound) {
			t.Fatalf("global after delete: %v", err)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Two CoordStores on one tree: writes of one reach the other's cache
// through watches.
func TestCoordStoreCachesFollowOtherProcess(t *testing.T) {
	srv := memcoord.NewServer()
	testCachesFollow(t, newCoordStore(t, srv), newCoordStore(t, srv))
}

func testCachesFollow(t *testing.T, a, b *CoordStore) {
	ctx := testenv.Context(t, 30*time.Second)
	must(t, a.CreateVersion(ctx, "orders-value", 1, 5))
	waitVersions(t, b, "orders-value", []VersionRecord{{1, 5, false}})
	must(t, a.CreateVersion(ctx, "orders-value", 2, 6))
	waitVersions(t, b, "orders-value", []VersionRecord{{1, 5, false}, {2, 6, false}})
	must(t, a.MarkDeleted(ctx, "orders-value", 1))
	waitVersions(t, b, "orders-value", []VersionRecord{{1, 5, true}, {2, 6, false}})
	must(t, b.DeleteVersion(ctx, "orders-value", 1))
	must(t, b.DeleteVersion(ctx, "orders-value", 2))
	waitVersions(t, a, "orders-value", nil)
	must(t, b.CreateVersion(ctx, "orders-value", 1, 7))
	waitVersions(t, a, "orders-value", []VersionRecord{{1, 7, false}})
	// b lost the race for version 1 of a subject a created: the conflict
	// refreshes b's cache at once.
	must(t, a.CreateVersion(ctx, "fresh", 1, 8))
	if err := b.CreateVersion(ctx, "fresh", 1, 9); !errors.Is(err, ErrVersionExists) {
		t.Fatalf("racing CreateVersion: %v", err)
	}
	if got, _ := b.Versions(ctx, "fresh"); !slices.Equal(got, []VersionRecord{{1, 8, false}}) {
		t.Fatalf("b after conflict: %v", got)
	}
}

func TestCoordStoreSessionLoss(t *testing.T) {
	srv := memcoord.NewServer()
	s := newCoordStore(t, srv)
	ctx := testenv.Context(t, 30*time.Second)
	must(t, s.CreateVersion(ctx, "s", 1, 1))
	must(t, srv.Expire(s.sess.ID()))
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.Versions(ctx, "s")
		if errors.Is(err, ErrStore) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("store still serves after its session expired: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitVersions(t *testing.T, s Store, subject string, want []VersionRecord) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := s.Versions(context.Background(), subject)
		if want == nil && errors.Is(err, ErrSubjectNotFound) {
			return
		}
		if err == nil && slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Versions(%q) = %v, %v; want %v within 10s", subject, got, err, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
