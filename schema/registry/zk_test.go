package registry

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

func init() {
	storeFactories = append(storeFactories, struct {
		name string
		new  func(t *testing.T) Store
	}{"zookeeper", func(t *testing.T) Store { return newZKStore(t, newZKChroot(t)) }})
}

// newZKChroot returns a connect string to the test ZooKeeper with a chroot
// of its own, so tests never see each other's nodes; removed when t ends.
func newZKChroot(t *testing.T) string {
	t.Helper()
	return zktest.Chroot(t, testenv.ZooKeeper(t), "registry-test")
}

// newZKStore opens a real ZooKeeper session and a CoordStore over it.
func newZKStore(t *testing.T, connect string) *CoordStore {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := zkcoord.Connect(ctx, connect, zkcoord.Config{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("connect to ZooKeeper %s: %v", connect, err)
	}
	s, err := NewCoordStore(ctx, sess, CoordConfig{RetryBackoff: 10 * time.Millisecond})
	if err != nil {
		sess.Close()
		t.Fatalf("NewCoordStore: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		sess.Close()
	})
	return s
}

func TestZKCachesFollowOtherProcess(t *testing.T) {
	connect := newZKChroot(t)
	testCachesFollow(t, newZKStore(t, connect), newZKStore(t, connect))
}

// A writer that creates a subject's nodes one at a time (as CreateAll does)
// can be seen half way: the subject node without its versions node. The
// other process's cache must still pick the subject up once the versions
// arrive, though the list watch fired only for the subject node.
func TestZKCacheSeesSubjectCreatedStepByStep(t *testing.T) {
	connect := newZKChroot(t)
	a := newZKStore(t, connect)
	ctx := testenv.Context(t, 30*time.Second)
	raw, err := zkcoord.Connect(ctx, connect, zkcoord.Config{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer raw.Close()
	create := func(path string, data []byte) {
		t.Helper()
		if _, err := raw.Create(ctx, path, data, coord.Persistent); err != nil {
			t.Fatalf("create %s: %v", path, err)
		}
	}
	version := func(id int) []byte {
		b, _ := json.Marshal(coordVersion{ID: id})
		return b
	}
	create(a.subjectPath("half"), nil)
	// Two complete subjects in turn: once "third" is cached, a list pass
	// that began after the one which read "half" without versions has
	// ended, so "half" was seen half way.
	for i, s := range []string{"second", "third"} {
		if err := raw.Multi(ctx,
			coord.Op{Kind: coord.OpCreate, Path: a.subjectPath(s), Mode: coord.Persistent},
			coord.Op{Kind: coord.OpCreate, Path: a.subjectPath(s, versionsNode), Mode: coord.Persistent},
			coord.Op{Kind: coord.OpCreate, Path: a.subjectPath(s, versionsNode, "1"), Data: version(20 + i), Mode: coord.Persistent},
		); err != nil {
			t.Fatalf("create %s: %v", s, err)
		}
		waitVersions(t, a, s, []VersionRecord{{1, 20 + i, false}})
	}
	if got, err := a.Versions(ctx, "half"); !errors.Is(err, ErrSubjectNotFound) {
		t.Fatalf("half-created subject: Versions = %v, %v; want not found", got, err)
	}
	create(a.subjectPath("half", versionsNode), nil)
	create(a.subjectPath("half", versionsNode, "1"), version(7))
	waitVersions(t, a, "half", []VersionRecord{{1, 7, false}})
}

// Deleting a subject's last version and registering it again at once, many
// times over: the other process's cache follows every round.
func TestZKCachesFollowDeleteAndRecreate(t *testing.T) {
	connect := newZKChroot(t)
	a, b := newZKStore(t, connect), newZKStore(t, connect)
	ctx := testenv.Context(t, 30*time.Second)
	for i := range 30 {
		must(t, b.CreateVersion(ctx, "orders-value", 1, 100+i))
		waitVersions(t, a, "orders-value", []VersionRecord{{1, 100 + i, false}})
		must(t, b.DeleteVersion(ctx, "orders-value", 1))
	}
	waitVersions(t, a, "orders-value", nil)
}
