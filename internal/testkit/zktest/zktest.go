package zktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
)

// Chroot returns servers ("host:port,...", no chroot) followed by a fresh
// chroot "/<prefix>-<random>", a zookeeper.connect string. zkcoord creates
// the chroot on first connect; its tree is deleted when t ends. The
// cleanup is registered now, so it runs after the cleanups registered
// later (sessions and brokers of the test close first).
func Chroot(t testing.TB, servers, prefix string) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	chroot := "/" + prefix + "-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := zkcoord.Connect(ctx, servers, zkcoord.Config{SessionTimeout: 10 * time.Second, ConnectionTimeout: 20 * time.Second})
		if err != nil {
			t.Errorf("removing %s: %v", chroot, err)
			return
		}
		defer s.Close()
		if err := DeleteTree(ctx, s, chroot); err != nil {
			t.Errorf("removing %s: %v", chroot, err)
		}
	})
	return servers + chroot
}

// DeleteTree deletes path and everything below it; a missing node is fine.
// Ephemeral nodes of another, even killed, session may be deleted too.
func DeleteTree(ctx context.Context, s coord.Session, path string) error {
	kids, _, err := s.Children(ctx, path)
	if errors.Is(err, coord.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := DeleteTree(ctx, s, coord.Join(path, k)); err != nil {
			return err
		}
	}
	if err := s.Delete(ctx, path, coord.AnyVersion); err != nil && !errors.Is(err, coord.ErrNoNode) {
		return err
	}
	return nil
}
