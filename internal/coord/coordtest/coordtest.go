package coordtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// Timeout bounds every wait in the suite: watch events, state changes and
// elections. Generous because a ZooKeeper session expiry is observed only
// after the client reconnects.
const Timeout = 15 * time.Second

// Connect opens a new session for t. Sessions opened with the same t share a
// tree. expire ends the session as a ZooKeeper session expiry does and
// returns once the server has expired it (the client may learn of it later).
type Connect func(t *testing.T) (s coord.Session, expire func())

// Run runs the whole conformance suite as subtests of t.
func Run(t *testing.T, connect Connect) {
	tests := []struct {
		name string
		fn   func(*testing.T, Connect)
	}{
		{"CreateGetSetDelete", testCreateGetSetDelete},
		{"CompareAndSet", testCompareAndSet},
		{"Children", testChildren},
		{"Sequential", testSequential},
		{"EphemeralRemovedOnClose", testEphemeralClose},
		{"EphemeralRemovedOnExpiry", testEphemeralExpiry},
		{"NoChildrenForEphemerals", testNoChildrenForEphemerals},
		{"WatchData", testWatchData},
		{"WatchExists", testWatchExists},
		{"WatchChildren", testWatchChildren},
		{"WatchFiresOncePerRegistration", testWatchOnce},
		{"WatchSessionLostOnExpiry", testWatchExpiry},
		{"WatchSessionLostOnClose", testWatchClose},
		{"States", testStates},
		{"CreateAll", testCreateAll},
		{"Multi", testMulti},
		{"MultiAllOrNothing", testMultiAtomic},
		{"ConcurrentCAS", testConcurrentCAS},
		{"PathValidation", testPathValidation},
		{"Elect", testElect},
		{"ElectAfterExpiry", testElectExpiry},
		{"ElectContext", testElectContext},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, connect) })
	}
}

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

// must turns a (value, error) result into the value, failing t on error:
// must(s.Create(...))(t).
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func wantErr(t *testing.T, err, want error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

func wantData(t *testing.T, s coord.Session, path, want string) coord.Stat {
	t.Helper()
	data, st, err := s.Get(ctxFor(t), path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	if !bytes.Equal(data, []byte(want)) {
		t.Fatalf("get %s = %q, want %q", path, data, want)
	}
	return st
}

// waitEvent receives the one event of a watch and checks that the channel
// is closed right after it.
func waitEvent(t *testing.T, ch <-chan coord.Event, want coord.Event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("watch closed without an event, want %+v", want)
		}
		if ev != want {
			t.Fatalf("watch event %+v, want %+v", ev, want)
		}
	case <-time.After(Timeout):
		t.Fatalf("no watch event within %v, want %+v", Timeout, want)
	}
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("second event %+v on a one-shot watch", ev)
		}
	case <-time.After(Timeout):
		t.Fatalf("watch channel not closed after its event")
	}
}

// noEvent checks that a watch stays silent for a short while; a negative
// check cannot be proven, only sampled.
func noEvent(t *testing.T, ch <-chan coord.Event, what string) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		t.Fatalf("%s: unexpected watch event %+v (open=%v)", what, ev, ok)
	case <-time.After(200 * time.Millisecond):
	}
}

func waitState(t *testing.T, s coord.Session, want coord.SessionState) {
	t.Helper()
	deadline := time.After(Timeout)
	for {
		select {
		case st := <-s.States():
			if st == want {
				return
			}
		case <-deadline:
			t.Fatalf("session state %v not delivered within %v", want, Timeout)
		}
	}
}

func testCreateGetSetDelete(t *testing.T, connect Connect) {
	s, _ := connect(t)
	ctx := ctxFor(t)
	before := time.Now().Add(-time.Minute) // server clocks may differ slightly
	if got := must(s.Create(ctx, "/a", []byte("one"), coord.Persistent))(t); got != "/a" {
		t.Fatalf("create returned %q, want /a", got)
	}
	st := wantData(t, s, "/a", "one")
	if st.Version != 0 || st.EphemeralOwner != 0 || st.NumChildren != 0 {
		t.Fatalf("fresh node stat %+v", st)
	}
	if st.Created.Before(before) || st.Modified.Before(st.Created) {
		t.Fatalf("times: created %v modified %v", st.Created, st.Modified)
	}
	ok, est, err := s.Exists(ctx, "/a")
	if err != nil || !ok || est.Version != 0 {
		t.Fatalf("exists /a = %v %+v %v", ok, est, err)
	}
	_, err = s.Create(ctx, "/a", nil, coord.Persistent)
	wantErr(t, err, coord.ErrNodeExists, "create existing")
	_, err = s.Create(ctx, "/missing/child", nil, coord.Persistent)
	wantErr(t, err, coord.ErrNoNode, "create without parent")

	st = must(s.Set(ctx, "/a", []byte("two"), 0))(t)
	if st.Version != 1 {
		t.Fatalf("version after set = %d, want 1", st.Version)
	}
	wantData(t, s, "/a", "two")
	_, err = s.Set(ctx, "/nope", nil, coord.AnyVersion)
	wantErr(t, err, coord.ErrNoNode, "set missing")

	// Empty data reads back empty.
	must(s.Create(ctx, "/empty", nil, coord.Persistent))(t)
	wantData(t, s, "/empty", "")

	must(s.Create(ctx, "/a/b", []byte("child"), coord.Persistent))(t)
	wantErr(t, s.Delete(ctx, "/a", coord.AnyVersion), coord.ErrNotEmpty, "delete non-empty")
	if err := s.Delete(ctx, "/a/b", 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "/a", 1); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Get(ctx, "/a")
	wantErr(t, err, coord.ErrNoNode, "get deleted")
	if ok, _, err := s.Exists(ctx, "/a"); ok || err != nil {
		t.Fatalf("exists deleted = %v, %v", ok, err)
	}
	wantErr(t, s.Delete(ctx, "/a", coord.AnyVersion), coord.ErrNoNode, "delete twice")
}

func testCompareAndSet(t *testing.T, connect Connect) {
	s, _ := connect(t)
	ctx := ctxFor(t)
	must(s.Create(ctx, "/cas", []byte("v0"), coord.Persistent))(t)
	must(s.Set(ctx, "/cas", []byte("v1"), 0))(t)
	_, err := s.Set(ctx, "/cas", []byte("stale"), 0)
	wantErr(t, err, coord.ErrBadVersion, "set with stale version")
	wantData(t, s, "/cas", "v1")
	st := must(s.Set(ctx, "/cas", []byte("any"), coord.AnyVersion))(t)
	if st.Version != 2 {
		t.Fatalf("version = %d, want 2", st.Version)
	}
	wantErr(t, s.Delete(ctx, "/cas", 1), coord.ErrBadVersion, "delete with stale version")
	wantData(t, s, "/cas", "any")
	if err := s.Delete(ctx, "/cas", 2); err != nil {
		t.Fatal(err)
	}
}

func testChildren(t *testing.T, connect Connect) {
	s, _ := connect(t)
	ctx := ctxFor(t)
	must(s.Create(ctx, "/p", nil, coord.Persistent))(t)
	names, st, err := s.Children(ctx, "/p")
	if err != nil || len(names) != 0 || st.NumChildren != 0 {
		t.Fatalf("children of empty = %v %+v %v", names, st, err)
	}
	cv := st.CVersion
	for _, n := range []string{"c", "a", "b10", "b2"} {
		must(s.Create(ctx, "/p/"+n, nil, coord.Persistent))(t)
	}
	names, st = must2(t)(s.Children(ctx, "/p"))
	if want := []string{"a", "b10", "b2", "c"}; !slices.Equal(names, want) {
		t.Fatalf("children = %v, want %v (sorted)", names, want)
	}
	if st.NumChildren != 4 || st.CVersion != cv+4 {
		t.Fatalf("stat after 4 creates: %+v (cversion was %d)", st, cv)
	}
	if err := s.Delete(ctx, "/p/b2", coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	_, st = must2(t)(s.Children(ctx, "/p"))
	if st.NumChildren != 3 || st.CVersion != cv+5 || st.Version != 0 {
		t.Fatalf("stat after delete: %+v", st)
	}
	_, _, err = s.Children(ctx, "/nope")
	wantErr(t, err, coord.ErrNoNode, "children of missing")
}

func must2(t *testing.T) func([]string, coord.Stat, error) ([]string, coord.Stat) {
	return func(n []string, st coord.Stat, err error) ([]string, coord.Stat) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n, st
	}
}

func testSequential(t *testing.T, connect Connect) {
	s, _ := connect(t)
	ctx := ctxFor(t)
	must(s.Create(ctx, "/q", nil, coord.Persistent))(t)
	var got []string
	for i := range 3 {
		p := must(s.Create(ctx, "/q/item-", []byte(strconv.Itoa(i)), coord.PersistentSequential))(t)
		got = append(got, p)
	}
	want := []string{"/q/item-0000000000", "/q/item-0000000001", "/q/item-0000000002"}
	if !slices.Equal(got, want) {
		t.Fatalf("sequential names %v, want %v", got, want)
	}
	wantData(t, s, want[1], "1")
	// The counter counts every child creation under the parent, plain ones
	// too, but not deletions (unlike the reported CVersion).
	if err := s.Delete(ctx, want[2], coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	must(s.Create(ctx, "/q/plain", nil, coord.Persistent))(t)
	p := must(s.Create(ctx, "/q/e-", nil, coord.EphemeralSequential))(t)
	if p != "/q/e-0000000004" {
		t.Fatalf("ephemeral sequential = %q, want /q/e-0000000004", p)
	}
	if _, st := must2(t)(s.Children(ctx, "/q")); st.CVersion != 6 {
		t.Fatalf("cversion after 5 creates and 1 delete = %d, want 6", st.CVersion)
	}
	_, st, _ := s.Get(ctx, p)
	if st.EphemeralOwner != s.ID() {
		t.Fatalf("ephemeral sequential owner %d, want %d", st.EphemeralOwner, s.ID())
	}
	names, _ := must2(t)(s.Children(ctx, "/q"))
	if want := []string{"e-0000000004", "item-0000000000", "item-0000000001", "plain"}; !slices.Equal(names, want) {
		t.Fatalf("children %v, want %v", names, want)
	}
}

func testEphemeralClose(t *testing.T, connect Connect) {
	s1, _ := connect(t)
	s2, _ := connect(t)
	ctx := ctxFor(t)
	if s1.ID() == 0 || s1.ID() == s2.ID() {
		t.Fatalf("session ids %d and %d", s1.ID(), s2.ID())
	}
	must(s1.Create(ctx, "/eph", []byte("mine"), coord.Ephemeral))(t)
	ok, st, ch, err := s2.ExistsW(ctx, "/eph")
	if err != nil || !ok || st.EphemeralOwner != s1.ID() {
		t.Fatalf("second session sees %v %+v %v, want owner %d", ok, st, err, s1.ID())
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ch, coord.Event{Type: coord.EventNodeDeleted, Path: "/eph"})
	if ok, _, err := s2.Exists(ctx, "/eph"); ok || err != nil {
		t.Fatalf("ephemeral still there after close: %v %v", ok, err)
	}
	_, err = s1.Create(ctx, "/x", nil, coord.Persistent)
	wantErr(t, err, coord.ErrClosed, "create on closed session")
	if err := s1.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func testEphemeralExpiry(t *testing.T, connect Connect) {
	s1, expire := connect(t)
	s2, _ := connect(t)
	ctx := ctxFor(t)
	must(s1.Create(ctx, "/reg", nil, coord.Persistent))(t)
	must(s1.Create(ctx, "/reg/1", []byte("broker 1"), coord.Ephemeral))(t)
	_, _, ch, err := s2.ChildrenW(ctx, "/reg")
	if err != nil {
		t.Fatal(err)
	}
	expire()
	waitEvent(t, ch, coord.Event{Type: coord.EventNodeChildrenChanged, Path: "/reg"})
	names, _ := must2(t)(s2.Children(ctx, "/reg"))
	if len(names) != 0 {
		t.Fatalf("children after expiry %v", names)
	}
	waitState(t, s1, coord.StateExpired)
	_, _, err = s1.Get(ctx, "/reg")
	wantErr(t, err, coord.ErrSessionExpired, "get on expired session")
	// The persistent parent survives its creator's expiry.
	wantData(t, s2, "/reg", "")
}

func testNoChildrenForEphemerals(t *testing.T, connect Connect) {
	s, _ := connect(t)
	ctx := ctxFor(t)
	must(s.Create(ctx, "/e", nil, coord.Ephemeral))(t)
	_, err := s.Create(ctx, "/e/child", nil, coord.Persistent)
	wantErr(t, err, coord.ErrNoChildrenForEphemerals, "child of ephemeral")
	_, err = s.CreateAll(ctx, "/e/a/b", nil, coord.Persistent)
	wantErr(t, err, coord.ErrNoChildrenForEphemerals, "CreateAll under ephemeral")
}

func testWatchData(t *testing.T, connect Connect) {
	s1, _ := connect(t)
	s2, _ := connect(t)
	ctx := ctxFor(t)
	must(s1.Create(ctx, "/w", []byte("a"), coord.Persistent))(t)
	data, st, ch, err := s2.GetW(ctx, "/w")
	if err != nil || string(data) != "a" || st.Version != 0 {
		t.Fatalf("GetW = %q %+v %v", data, st, err)
	}
	must(s1.Set(ctx, "/w", []byte("b"), 0))(t)
	waitEvent(t, ch, coord.Event{Type: coord.EventNodeDataChanged, Path: "/w"})
	wantData(t, s2, "/w", "b")

	_, _, ch, err = s2.GetW(ctx, "/w")
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Delete(ctx, "/w", coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ch, coord.Event{Type: coord.EventNodeDeleted, Path: "/w"})

	_, _, _, err = s2.GetW(ctx, "/w")
	wantErr(t, err, coord.ErrNoNode, "GetW on missing node")
}

func testWatchExists(t *testing.T, connect Connect) {
	s1, _ := connect(t)
	s2, _ := connect(t)
	ctx := ctxFor(t)
	ok, _, ch, err := s2.ExistsW(ctx, "/later")
	if err != nil || ok {
		t.Fatalf("ExistsW on missing = %v %v", ok, err)
	}
	must(s1.Create(ctx, "/later", []byte("x"), coord.Persistent))(t)
	waitEvent(t, ch, coord.Event{Type: coord.EventNodeCreated, Path: "/later"})

	_, _, ch, err = s2.ExistsW(ctx, "/later")
	if err != nil {
		t.Fatal(err)
	}
	must(s1.Set(ctx, "/later", []byte("y"), coord.AnyVersion))(t)
	waitEvent(t, ch, coord.Event{Type: coord.EventNodeDataChanged, Path: "/later"})

	_, _, ch, err = s2.ExistsW(ctx, "/later")
	if err != nil {
		t.Fatal(err)
	}
	// A child change is not a change of the node itself.
	must(s1.Create(ctx, "/later/kid", nil, coord.Persistent))(t)
	noEvent(t, ch, "exists-watch on child create")
	if err := s1.Delete(ctx, "/later/kid", coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := s1.Delete(ctx, "/later", coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ch, coord.Event{Type: coord.EventNodeDeleted, Path: "/later"})
}

func testWatchChildren(t *testing.T, connect Connect) {
	s1, _ := connect(t)
	s2, _ := connect(t)
	ctx := ctxFor(t)
	must(s1.Create(ctx, "/ids", nil, coord.Persistent))(t)
	names, _, ch, err := s2.ChildrenW(ctx, "/ids")
	if err != nil || len(names) != 0 {
		t.Fatalf("ChildrenW = %v %v", names, err)
	}
	must(s1.Set(ctx, "/ids", []byte("data"), coord.AnyVersion))(t)
	noEvent(t, ch, "child-watch on data change")
	must(s1.Create(ctx, "/ids/7", nil, coord.Persistent))(t)
	waitEvent(t, ch, coord.Event{Type: coord.EventNodeChildrenChanged, Path: "/ids"})

	names, _, ch, err = s2.ChildrenW(ctx, "/ids")
	if err != nil || !slices.Equal(names, []string{"7"}) {
		t.Fatalf("ChildrenW = %v %v", names, err)
	}
	if err := s1.Delete(ctx, "/ids/7", coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ch, coord.Event{Type: coord.EventNodeChildrenChanged, Path: "/ids"})

	_, _, ch, err = s2.ChildrenW(ctx, "/ids")
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Delete(ctx, "/ids", coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ch, coord.Event{Type: coord.EventNodeDeleted, Path: "/ids"})
	_, _, _, err = s2.ChildrenW(ctx, "/ids")
	wantErr(t, err, coord.ErrNoNode, "ChildrenW on missing node")
}

func testWatchOnce(t *testing.T, connect Connect) {
	s, _ := connect(t)
	ctx := ctxFor(t)
	must(s.Create(ctx, "/once", []byte("0"), coord.Persistent))(t)
	// Two registrations on one path by one session: each channel gets
	// exactly one event, and later writes reach neither.
	_, _, ch1, err := s.GetW(ctx, "/once")
	if err != nil {
		t.Fatal(err)
	}
	_, _, ch2, err := s.ExistsW(ctx, "/once")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		must(s.Set(ctx, "/once", []byte(strconv.Itoa(i)), coord.AnyVersion))(t)
	}
	waitEvent(t, ch1, coord.Event{Type: coord.EventNodeDataChanged, Path: "/once"})
	waitEvent(t, ch2, coord.Event{Type: coord.EventNodeDataChanged, Path: "/once"})
	wantData(t, s, "/once", "3")
}

func testWatchExpiry(t *testing.T, connect Connect) {
	s1, expire := connect(t)
	ctx := ctxFor(t)
	must(s1.Create(ctx, "/n", nil, coord.Persistent))(t)
	_, _, dataCh, err := s1.GetW(ctx, "/n")
	if err != nil {
		t.Fatal(err)
	}
	_, _, existCh, err := s1.ExistsW(ctx, "/absent")
	if err != nil {
		t.Fatal(err)
	}
	_, _, childCh, err := s1.ChildrenW(ctx, "/n")
	if err != nil {
		t.Fatal(err)
	}
	expire()
	waitEvent(t, dataCh, coord.Event{Type: coord.EventSessionLost, Path: "/n"})
	waitEvent(t, existCh, coord.Event{Type: coord.EventSessionLost, Path: "/absent"})
	waitEvent(t, childCh, coord.Event{Type: coord.EventSessionLost, Path: "/n"})
	waitState(t, s1, coord.StateExpired)
	_, _, _, err = s1.ExistsW(ctx, "/n")
	wantErr(t, err, coord.ErrSessionExpired, "watch on expired session")
	if err := s1.Close(); err != nil {
		t.Fatalf("close after expiry: %v", err)
	}
}

func testWatchClose(t *testing.T, connect Connect) {
	s1, _ := connect(t)
	ctx := ctxFor(t)
	must(s1.Create(ctx, "/n", nil, coord.Persistent))(t)
	_, _, ch, err := s1.GetW(ctx, "/n")
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ch, coord.Event{Type: coord.EventSessionLost, Path: "/n"})
	_, _, err = s1.Get(ctx, "/n")
	wantErr(t, err, coord.ErrClosed, "get on closed session")
}

func testStates(t *testing.T, connect Connect) {
	s, expire := connect(t)
	select {
	case st := <-s.States():
		if st != coord.StateConnected {
			t.Fatalf("first state %v, want StateConnected", st)
		}
	case <-time.After(Timeout):
		t.Fatal("no StateConnected after connect")
	}
	expire()
	waitState(t, s, coord.StateExpired)
}

func testCreateAll(t *testing.T, connect Connect) {
	s, _ := connect(t)
	ctx := ctxFor(t)
	got := must(s.CreateAll(ctx, "/consumers/g/offsets/t/0", []byte("42"), coord.Persistent))(t)
	if got != "/consumers/g/offsets/t/0" {
		t.Fatalf("CreateAll returned %q", got)
	}
	wantData(t, s, "/consumers/g/offsets/t/0", "42")
	st := wantData(t, s, "/consumers/g", "")
	if st.NumChildren != 1 || st.EphemeralOwner != 0 {
		t.Fatalf("parent stat %+v", st)
	}
	// Existing parents are fine; an existing node is not.
	must(s.CreateAll(ctx, "/consumers/g/ids/c1", []byte("sub"), coord.Ephemeral))(t)
	_, err := s.CreateAll(ctx, "/consumers/g/ids/c1", nil, coord.Ephemeral)
	wantErr(t, err, coord.ErrNodeExists, "CreateAll of existing node")
	p := must(s.CreateAll(ctx, "/seq/deep/n-", nil, coord.PersistentSequential))(t)
	if p != "/seq/deep/n-0000000000" {
		t.Fatalf("sequential CreateAll = %q", p)
	}
	_, err = s.CreateAll(ctx, "bad", nil, coord.Persistent)
	wantErr(t, err, coord.ErrBadPath, "CreateAll bad path")
}

func testMulti(t *testing.T, connect Connect) {
	s1, _ := connect(t)
	s2, _ := connect(t)
	ctx := ctxFor(t)
	must(s1.Create(ctx, "/m", nil, coord.Persistent))(t)
	must(s1.Create(ctx, "/m/x", []byte("x0"), coord.Persistent))(t)
	must(s1.Create(ctx, "/m/old", nil, coord.Persistent))(t)
	_, _, ch, err := s2.ChildrenW(ctx, "/m")
	if err != nil {
		t.Fatal(err)
	}
	err = s1.Multi(ctx,
		coord.Op{Kind: coord.OpCheck, Path: "/m/x", Version: 0},
		coord.Op{Kind: coord.OpCreate, Path: "/m/new", Data: []byte("n"), Mode: coord.Persistent},
		coord.Op{Kind: coord.OpCreate, Path: "/m/new/kid", Data: []byte("k"), Mode: coord.Persistent},
		coord.Op{Kind: coord.OpSet, Path: "/m/x", Data: []byte("x1"), Version: 0},
		coord.Op{Kind: coord.OpDelete, Path: "/m/old", Version: coord.AnyVersion},
		coord.Op{Kind: coord.OpCreate, Path: "/m/eph", Mode: coord.Ephemeral},
	)
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ch, coord.Event{Type: coord.EventNodeChildrenChanged, Path: "/m"})
	names, _ := must2(t)(s2.Children(ctx, "/m"))
	if want := []string{"eph", "new", "x"}; !slices.Equal(names, want) {
		t.Fatalf("children after multi %v, want %v", names, want)
	}
	wantData(t, s2, "/m/new/kid", "k")
	if st := wantData(t, s2, "/m/x", "x1"); st.Version != 1 {
		t.Fatalf("version after multi set %d", st.Version)
	}
	_, st, _ := s2.Get(ctx, "/m/eph")
	if st.EphemeralOwner != s1.ID() {
		t.Fatalf("multi ephemeral owner %d, want %d", st.EphemeralOwner, s1.ID())
	}
	if err := s1.Multi(ctx); err != nil {
		t.Fatalf("empty multi: %v", err)
	}
}

func testMultiAtomic(t *testing.T, connect Connect) {
	s1, _ := connect(t)
	s2, _ := connect(t)
	ctx := ctxFor(t)
	must(s1.Create(ctx, "/m", nil, coord.Persistent))(t)
	must(s1.Create(ctx, "/m/x", []byte("x0"), coord.Persistent))(t)
	_, _, dataCh, err := s2.GetW(ctx, "/m/x")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		ops  []coord.Op
		want error
	}{
		{"bad version last", []coord.Op{
			{Kind: coord.OpCreate, Path: "/m/a", Mode: coord.Persistent},
			{Kind: coord.OpSet, Path: "/m/x", Data: []byte("lost"), Version: coord.AnyVersion},
			{Kind: coord.OpCheck, Path: "/m/x", Version: 7},
		}, coord.ErrBadVersion},
		{"node exists in the middle", []coord.Op{
			{Kind: coord.OpSet, Path: "/m/x", Data: []byte("lost"), Version: 0},
			{Kind: coord.OpCreate, Path: "/m/x", Mode: coord.Persistent},
			{Kind: coord.OpCreate, Path: "/m/b", Mode: coord.Persistent},
		}, coord.ErrNodeExists},
		{"delete then missing parent", []coord.Op{
			{Kind: coord.OpDelete, Path: "/m/x", Version: 0},
			{Kind: coord.OpCreate, Path: "/m/x/under", Mode: coord.Persistent},
		}, coord.ErrNoNode},
		{"not empty", []coord.Op{
			{Kind: coord.OpCreate, Path: "/m/c", Mode: coord.Persistent},
			{Kind: coord.OpDelete, Path: "/m", Version: coord.AnyVersion},
		}, coord.ErrNotEmpty},
	}
	for _, c := range cases {
		err := s1.Multi(ctx, c.ops...)
		wantErr(t, err, c.want, c.name)
		names, st := must2(t)(s2.Children(ctx, "/m"))
		if !slices.Equal(names, []string{"x"}) {
			t.Fatalf("%s: children after failed multi %v", c.name, names)
		}
		if st.CVersion != 1 {
			t.Fatalf("%s: parent cversion %d after failed multi, want 1", c.name, st.CVersion)
		}
		if st := wantData(t, s2, "/m/x", "x0"); st.Version != 0 {
			t.Fatalf("%s: version %d after failed multi", c.name, st.Version)
		}
	}
	noEvent(t, dataCh, "watch after failed multis")
}

func testConcurrentCAS(t *testing.T, connect Connect) {
	const workers, increments = 4, 25
	var sessions []coord.Session
	for range 2 {
		s, _ := connect(t)
		sessions = append(sessions, s)
	}
	ctx := ctxFor(t)
	must(sessions[0].Create(ctx, "/counter", []byte("0"), coord.Persistent))(t)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		s := sessions[w%len(sessions)]
		wg.Go(func() {
			for range increments {
				if err := increment(ctx, s, "/counter"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := wantData(t, sessions[1], "/counter", strconv.Itoa(workers*increments))
	if st.Version != workers*increments {
		t.Fatalf("version %d, want %d", st.Version, workers*increments)
	}
}

func increment(ctx context.Context, s coord.Session, path string) error {
	for {
		data, st, err := s.Get(ctx, path)
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(string(data))
		if err != nil {
			return fmt.Errorf("counter holds %q: %w", data, err)
		}
		_, err = s.Set(ctx, path, []byte(strconv.Itoa(n+1)), st.Version)
		if err == nil {
			return nil
		}
		if !errors.Is(err, coord.ErrBadVersion) {
			return err
		}
	}
}

func testPathValidation(t *testing.T, connect Connect) {
	s, _ := connect(t)
	ctx := ctxFor(t)
	bad := []string{"", "a", "a/b", "/a/", "/a//b", "/a/./b", "/a/../b", "/.", "/a\x00b", "/a\x01"}
	for _, p := range bad {
		_, err := s.Create(ctx, p, nil, coord.Persistent)
		wantErr(t, err, coord.ErrBadPath, fmt.Sprintf("create %q", p))
		_, _, err = s.Get(ctx, p)
		wantErr(t, err, coord.ErrBadPath, fmt.Sprintf("get %q", p))
		_, _, _, err = s.ExistsW(ctx, p)
		wantErr(t, err, coord.ErrBadPath, fmt.Sprintf("exists %q", p))
		_, err = s.Set(ctx, p, nil, coord.AnyVersion)
		wantErr(t, err, coord.ErrBadPath, fmt.Sprintf("set %q", p))
		wantErr(t, s.Delete(ctx, p, coord.AnyVersion), coord.ErrBadPath, fmt.Sprintf("delete %q", p))
		_, _, err = s.Children(ctx, p)
		wantErr(t, err, coord.ErrBadPath, fmt.Sprintf("children %q", p))
		err = s.Multi(ctx, coord.Op{Kind: coord.OpCreate, Path: p})
		wantErr(t, err, coord.ErrBadPath, fmt.Sprintf("multi %q", p))
	}
	// Dots inside a name, dashes and non-ASCII letters are fine.
	for _, p := range []string{"/a.b", "/..x", "/topic-1_x", "/Zürich"} {
		must(s.Create(ctx, p, nil, coord.Persistent))(t)
		wantData(t, s, p, "")
	}
	names, _ := must2(t)(s.Children(ctx, "/"))
	for _, want := range []string{"..x", "Zürich", "a.b", "topic-1_x"} {
		if !slices.Contains(names, want) {
			t.Fatalf("root children %v lack %q", names, want)
		}
	}
}

func testElect(t *testing.T, connect Connect) {
	s1, _ := connect(t)
	s2, _ := connect(t)
	s3, _ := connect(t)
	ctx := ctxFor(t)
	l1, err := coord.Elect(ctx, s1, "/controller", []byte(`{"brokerid":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if l1.Path() != "/controller" {
		t.Fatalf("leadership path %q", l1.Path())
	}
	if st := wantData(t, s2, "/controller", `{"brokerid":1}`); st.EphemeralOwner != s1.ID() {
		t.Fatalf("controller owner %d, want %d", st.EphemeralOwner, s1.ID())
	}
	// Electing again on the holding session returns at once.
	again, err := coord.Elect(ctx, s1, "/controller", []byte("ignored"))
	if err != nil {
		t.Fatal(err)
	}
	wantData(t, s2, "/controller", `{"brokerid":1}`)

	type result struct {
		who int
		l   *coord.Leadership
		err error
	}
	won := make(chan result, 2)
	for i, s := range []coord.Session{s2, s3} {
		go func() {
			l, err := coord.Elect(ctx, s, "/controller", []byte(fmt.Sprintf(`{"brokerid":%d}`, i+2)))
			won <- result{i + 2, l, err}
		}()
	}
	select {
	case r := <-won:
		t.Fatalf("candidate %d elected while the leader lives (err %v)", r.who, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := l1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	for _, l := range []*coord.Leadership{l1, again} {
		select {
		case <-l.Lost():
		case <-time.After(Timeout):
			t.Fatal("Lost not closed after Resign")
		}
	}
	var r result
	select {
	case r = <-won:
		if r.err != nil {
			t.Fatal(r.err)
		}
	case <-time.After(Timeout):
		t.Fatal("no candidate elected after the leader resigned")
	}
	wantData(t, s1, "/controller", fmt.Sprintf(`{"brokerid":%d}`, r.who))
	select {
	case <-r.l.Lost():
		t.Fatal("new leader's Lost closed")
	case other := <-won:
		t.Fatalf("two leaders: %d and %d (err %v)", r.who, other.who, other.err)
	case <-time.After(200 * time.Millisecond):
	}
	// The winner closes its session: the last candidate takes over.
	winner := map[int]coord.Session{2: s2, 3: s3}[r.who]
	if err := winner.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.l.Lost():
	case <-time.After(Timeout):
		t.Fatal("Lost not closed after the leader's session closed")
	}
	select {
	case last := <-won:
		if last.err != nil {
			t.Fatal(last.err)
		}
		wantData(t, s1, "/controller", fmt.Sprintf(`{"brokerid":%d}`, last.who))
		if err := last.l.Resign(ctx); err != nil {
			t.Fatal(err)
		}
	case <-time.After(Timeout):
		t.Fatal("last candidate not elected")
	}
	if ok, _, _ := s1.Exists(ctx, "/controller"); ok {
		t.Fatal("controller node left after the last resign")
	}
}

func testElectExpiry(t *testing.T, connect Connect) {
	s1, expire1 := connect(t)
	s2, _ := connect(t)
	ctx := ctxFor(t)
	l1, err := coord.Elect(ctx, s1, "/jobs/locks/loader", []byte("host-1"))
	if err != nil {
		t.Fatal(err)
	}
	won := make(chan error, 1)
	var l2 *coord.Leadership
	go func() {
		var err error
		l2, err = coord.Elect(ctx, s2, "/jobs/locks/loader", []byte("host-2"))
		won <- err
	}()
	expire1()
	select {
	case <-l1.Lost():
	case <-time.After(Timeout):
		t.Fatal("leadership not lost on session expiry")
	}
	select {
	case err := <-won:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(Timeout):
		t.Fatal("no takeover after the leader's session expired")
	}
	wantData(t, s2, "/jobs/locks/loader", "host-2")
	// An expired session cannot be elected.
	waitState(t, s1, coord.StateExpired)
	_, err = coord.Elect(ctx, s1, "/jobs/locks/other", nil)
	wantErr(t, err, coord.ErrSessionExpired, "elect on expired session")
	// A waiting candidate whose session expires gets ErrSessionExpired.
	s3, expire3 := connect(t)
	waiting := make(chan error, 1)
	go func() {
		_, err := coord.Elect(ctx, s3, "/jobs/locks/loader", nil)
		waiting <- err
	}()
	time.Sleep(200 * time.Millisecond) // let it reach its watch; the outcome is the same either way
	expire3()
	select {
	case err := <-waiting:
		wantErr(t, err, coord.ErrSessionExpired, "waiting candidate on expiry")
	case <-time.After(Timeout):
		t.Fatal("waiting candidate not released by its session's expiry")
	}
	select {
	case <-l2.Lost():
		t.Fatal("leader lost by another session's expiry")
	default:
	}
}

func testElectContext(t *testing.T, connect Connect) {
	s1, _ := connect(t)
	s2, _ := connect(t)
	ctx := ctxFor(t)
	if _, err := coord.Elect(ctx, s1, "/leader", nil); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := coord.Elect(short, s2, "/leader", nil)
	wantErr(t, err, context.DeadlineExceeded, "elect while held")
	_, err = coord.Elect(ctx, s2, "bad/path", nil)
	wantErr(t, err, coord.ErrBadPath, "elect bad path")
}
