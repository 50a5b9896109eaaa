package registry

import (
	"context"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testenv"
	"github.com/tributary/tributary/internal/zktest"
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
