package compact

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testenv"
)

// openHDFS returns the test HDFS and a fresh base directory, removed when t ends.
func openHDFS(t testing.TB) (filesys.FS, string) {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	uri := "hdfs://" + testenv.HDFS(t) + "/jobs-compact-test-" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fsys, base, err := filesys.Open(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = fsys.RemoveAll(base)
		fsys.Close()
	})
	return fsys, base
}
