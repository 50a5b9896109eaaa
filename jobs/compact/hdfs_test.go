package compact

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/filesys/filesystest"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/testkit/testenv"
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

// openKerberizedHDFS returns the Kerberized test HDFS of protection with a
// fresh base directory (removed when t ends), its NameNode address and a
// --hdfs-config properties file that reaches it.
func openKerberizedHDFS(t *testing.T, protection string) (fsys filesys.FS, base, addr, config string) {
	t.Helper()
	c := testenv.SecureHDFS(t, protection)
	fsys, base, _, _ = filesystest.KerberizedHDFS(t, protection)
	config = filepath.Join(t.TempDir(), "hdfs.properties")
	f, err := os.Create(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := properties.Write(f, filesystest.KerberosProperties(c)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return fsys, base, c.Addr, config
}
