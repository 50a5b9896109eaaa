package loader

import (
	"context"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// TestClaimOwnNodeLeftByUnknownRelease: a release whose outcome was
// unknown (a ZooKeeper server lost mid-request) leaves the process's own
// owner node; claiming the partition again must take it back, not wait for
// it to go away (which it never would while the session lives), while
// another process still sees it held.
func TestClaimOwnNodeLeftByUnknownRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{Name: "claims", ZooKeeperConnect: zktest.Chroot(t, testenv.ZooKeeper(t), "loader-claims"), ZKSessionTimeout: 6 * time.Second}
	a, b := cfg, cfg
	a.Instance, b.Instance = "a", "b"
	oa, err := connectOwners(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer oa.close()
	ob, err := connectOwners(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.close()
	if ok, err := oa.claim(ctx, "t", 0); !ok || err != nil {
		t.Fatalf("first claim: %v, %v", ok, err)
	}
	// The release never happened, as when its Delete failed in flight.
	if ok, err := oa.claim(ctx, "t", 0); !ok || err != nil {
		t.Fatalf("claiming its own node again: %v, %v; want it taken back", ok, err)
	}
	if ok, err := ob.claim(ctx, "t", 0); ok || err != nil {
		t.Fatalf("another process claimed a held partition: %v, %v", ok, err)
	}
	if err := oa.release(ctx, "t", 0); err != nil {
		t.Fatal(err)
	}
	if ok, err := ob.claim(ctx, "t", 0); !ok || err != nil {
		t.Fatalf("claim after the release: %v, %v", ok, err)
	}
}
