package memcoord

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tributary/tributary/internal/coord"
)

// crash drops a durable server's files as a killed process would: no final
// snapshot, the lock released.
func crash(t *testing.T, srv *Server) {
	t.Helper()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	st := srv.store
	srv.store, srv.closed = nil, true
	_ = st.log.Close()
	_ = st.lock.Close()
}

// mustOpen opens a durable server on dir.
func mustOpen(t *testing.T, dir string) *Server {
	t.Helper()
	srv, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// tree returns every node's path, data and version, ephemeral or not.
func tree(t *testing.T, srv *Server) map[string]string {
	t.Helper()
	out := map[string]string{}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.walk("/", srv.root, func(p string, n *node) {
		st := n.statCopy()
		out[p] = fmt.Sprintf("%s|version %d|cversion %d", n.data, st.Version, st.CVersion)
	})
	return out
}

// writeSome leaves persistent nodes of every kind of write, and ephemeral
// ones, on srv.
func writeSome(t *testing.T, srv *Server) {
	t.Helper()
	ctx := context.Background()
	s := srv.Connect(Config{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.CreateAll(ctx, "/brokers/topics/orders", []byte(`{"partitions":{"0":[1,2,3]}}`), coord.Persistent)
	must(err)
	_, err = s.CreateAll(ctx, "/brokers/topics/orders/partitions/0/state", []byte(`{"leader":1,"isr":[1,2,3]}`), coord.Persistent)
	must(err)
	_, err = s.Set(ctx, "/brokers/topics/orders/partitions/0/state", []byte(`{"leader":2,"isr":[2,3]}`), 0)
	must(err)
	_, err = s.CreateAll(ctx, "/brokers/ids/1", []byte("eph"), coord.Ephemeral)
	must(err)
	_, err = s.CreateAll(ctx, "/seq/n-", nil, coord.PersistentSequential)
	must(err)
	_, err = s.Create(ctx, "/seq/e-", nil, coord.EphemeralSequential)
	must(err)
	must(s.Multi(ctx,
		coord.Op{Kind: coord.OpCreate, Path: "/config", Mode: coord.Persistent},
		coord.Op{Kind: coord.OpCreate, Path: "/config/topics", Mode: coord.Persistent},
		coord.Op{Kind: coord.OpCreate, Path: "/config/topics/orders", Data: []byte(`{"min.insync.replicas":"2"}`), Mode: coord.Persistent},
		coord.Op{Kind: coord.OpCreate, Path: "/gone", Mode: coord.Persistent},
	))
	must(s.Multi(ctx,
		coord.Op{Kind: coord.OpDelete, Path: "/gone", Version: 0},
		coord.Op{Kind: coord.OpCreate, Path: "/gone", Data: []byte("again"), Mode: coord.Persistent},
	))
	must(s.Delete(ctx, "/gone", coord.AnyVersion))
	// Left open: its ephemerals go with the process.
}

// persistentOnly drops the ephemeral nodes a restart loses from want.
func persistentOnly(want map[string]string) map[string]string {
	out := map[string]string{}
	for p, v := range want {
		if p != "/brokers/ids/1" && p != "/seq/e-0000000001" {
			out[p] = v
		}
	}
	return out
}

// TestDurableRestart: a server opened on the directory of one that closed,
// or crashed, has every persistent node with its data and versions, no
// ephemeral node, and sequential names going on from where they were.
func TestDurableRestart(t *testing.T) {
	for _, stop := range []string{"close", "crash"} {
		t.Run(stop, func(t *testing.T) {
			dir := t.TempDir()
			srv := mustOpen(t, dir)
			writeSome(t, srv)
			before := tree(t, srv)
			if stop == "close" {
				if err := srv.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				crash(t, srv)
			}
			again := mustOpen(t, dir)
			defer again.Close()
			after := tree(t, again)
			want := persistentOnly(before)
			// The parents of the lost ephemerals count their deletion
			// in their cversion, as ZooKeeper's do.
			for p, cv := range map[string]int{"/brokers/ids": 2, "/seq": 3} {
				want[p] = fmt.Sprintf("|version 0|cversion %d", cv)
			}
			if !maps.Equal(after, want) {
				t.Fatalf("after %s, tree\n%v\nwant\n%v", stop, after, want)
			}
			s := again.Connect(Config{})
			ctx := context.Background()
			name, err := s.Create(ctx, "/seq/n-", nil, coord.PersistentSequential)
			if err != nil || name != "/seq/n-0000000002" {
				t.Fatalf("next sequential name %q (%v), want /seq/n-0000000002", name, err)
			}
			ids, _, err := s.Children(ctx, "/brokers/ids")
			if err != nil || len(ids) != 0 {
				t.Fatalf("/brokers/ids children %v (%v), want none", ids, err)
			}
			// Compare-and-set goes on from the versions written before.
			if _, err := s.Set(ctx, "/brokers/topics/orders/partitions/0/state", nil, 0); !errors.Is(err, coord.ErrBadVersion) {
				t.Fatalf("set at version 0: %v, want ErrBadVersion", err)
			}
			if _, err := s.Set(ctx, "/brokers/topics/orders/partitions/0/state", []byte("x"), 1); err != nil {
				t.Fatalf("set at version 1: %v", err)
			}
		})
	}
}

// TestDurableTornRecord: a record cut short by a crash is dropped (its
// write never returned), and writes after the restart are logged after
// the good prefix.
func TestDurableTornRecord(t *testing.T) {
	dir := t.TempDir()
	srv := mustOpen(t, dir)
	ctx := context.Background()
	s := srv.Connect(Config{})
	for _, p := range []string{"/a", "/b"} {
		if _, err := s.Create(ctx, p, []byte(p), coord.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	crash(t, srv)
	log := filepath.Join(dir, TxnLogFile)
	info, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(log, info.Size()-3); err != nil {
		t.Fatal(err)
	}
	srv = mustOpen(t, dir)
	s = srv.Connect(Config{})
	names, _, _ := s.Children(ctx, "/")
	if !slices.Equal(names, []string{"a"}) {
		t.Fatalf("after a torn last record: %v, want [a]", names)
	}
	if _, err := s.Create(ctx, "/c", nil, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	crash(t, srv)
	srv = mustOpen(t, dir)
	defer srv.Close()
	names, _, _ = srv.Connect(Config{}).Children(ctx, "/")
	if !slices.Equal(names, []string{"a", "c"}) {
		t.Fatalf("after the restart: %v, want [a c]", names)
	}
}

// TestDurableCompaction: once the log grows past compactAt, the tree is
// in the snapshot and the log starts again; both together restore it, also
// after a crash that left records the snapshot already holds.
func TestDurableCompaction(t *testing.T) {
	dir := t.TempDir()
	srv := mustOpen(t, dir)
	ctx := context.Background()
	s := srv.Connect(Config{})
	if _, err := s.Create(ctx, "/big", nil, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 64<<10)
	var last int32
	for i := 0; i < compactAt/len(val)+8; i++ {
		val[0] = byte(i)
		st, err := s.Set(ctx, "/big", val, coord.AnyVersion)
		if err != nil {
			t.Fatal(err)
		}
		last = st.Version
	}
	if info, err := os.Stat(filepath.Join(dir, TxnLogFile)); err != nil || info.Size() >= compactAt {
		t.Fatalf("log after compaction: %v %v", info.Size(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, SnapshotFile)); err != nil {
		t.Fatal(err)
	}
	crash(t, srv)
	srv = mustOpen(t, dir)
	defer srv.Close()
	data, st, err := srv.Connect(Config{}).Get(ctx, "/big")
	if err != nil || st.Version != last || data[0] != val[0] {
		t.Fatalf("/big: version %d (want %d), first byte %d (want %d), %v", st.Version, last, data[0], val[0], err)
	}
}

// TestDurableLocked: a directory is served by one server at a time; a
// closed server refuses writes.
func TestDurableLocked(t *testing.T) {
	dir := t.TempDir()
	srv := mustOpen(t, dir)
	if _, err := Open(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	s := srv.Connect(Config{})
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(context.Background(), "/x", nil, coord.Persistent); !errors.Is(err, coord.ErrClosed) {
		t.Fatalf("create after close: %v, want ErrClosed", err)
	}
	again := mustOpen(t, dir)
	_ = again.Close()
}

// BenchmarkSet: a Set on a durable server (one fsynced log record) and on
// an in-memory one.
func BenchmarkSet(b *testing.B) {
	for _, kind := range []string{"memory", "durable"} {
		b.Run(kind, func(b *testing.B) {
			srv := NewServer()
			if kind == "durable" {
				var err error
				if srv, err = Open(b.TempDir()); err != nil {
					b.Fatal(err)
				}
				defer srv.Close()
			}
			s := srv.Connect(Config{})
			ctx := context.Background()
			if _, err := s.Create(ctx, "/n", nil, coord.Persistent); err != nil {
				b.Fatal(err)
			}
			val := make([]byte, 200)
			b.SetBytes(int64(len(val)))
			b.ResetTimer()
			for range b.N {
				if _, err := s.Set(ctx, "/n", val, coord.AnyVersion); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
