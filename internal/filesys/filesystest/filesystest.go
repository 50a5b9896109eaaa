// Package filesystest holds the conformance suite every filesys.FS passes
// and helpers giving a test a fresh base directory on the local file
// system, on the test HDFS (testenv.HDFS) or on a Kerberized test HDFS
// (testenv.SecureHDFS), removed when the test ends.
package filesystest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// Local returns the local FS and a fresh base directory under t.TempDir().
func Local(t testing.TB) (filesys.FS, string) {
	t.Helper()
	return filesys.Local(), t.TempDir()
}

// HDFS returns a connection to the test HDFS and a fresh base directory
// /tributary-test/<test>-<random>, removed (with the connection closed)
// when t ends.
func HDFS(t testing.TB) (filesys.FS, string) {
	t.Helper()
	fsys, base, _ := HDFSURI(t)
	return fsys, base
}

// HDFSURI is HDFS plus the hdfs:// URI of the base directory, for tests
// that start processes configured with a URI.
func HDFSURI(t testing.TB) (filesys.FS, string, string) {
	t.Helper()
	return hdfsBase(t, testenv.HDFS(t), filesys.HDFSOptions{})
}

// KerberizedHDFS is HDFSURI on the Kerberized test HDFS with data transfer
// protection protection (testenv.SecureHDFS), plus the client options that
// reach it, logged in as the cluster's client principal from its keytab.
func KerberizedHDFS(t testing.TB, protection string) (filesys.FS, string, string, filesys.HDFSOptions) {
	t.Helper()
	c := testenv.SecureHDFS(t, protection)
	opts := KerberosOptions(c)
	fsys, base, uri := hdfsBase(t, c.Addr, opts)
	return fsys, base, uri, opts
}

// KerberosOptions are the client options for the Kerberized cluster c.
func KerberosOptions(c testenv.KerberizedHDFS) filesys.HDFSOptions {
	return filesys.HDFSOptions{
		Kerberos: &filesys.Kerberos{Principal: c.ClientPrincipal, Keytab: c.ClientKeytab, Krb5Conf: c.Krb5Conf,
			NameNodePrincipal: c.NameNodePrincipal},
		DataTransferProtection: c.Protection, CipherSuites: c.CipherSuites,
	}
}

// KerberosProperties are KerberosOptions as the properties
// filesys.HDFSOptionsFromProperties reads (for a --hdfs-config file).
func KerberosProperties(c testenv.KerberizedHDFS) map[string]string {
	p := map[string]string{
		"hdfs.authentication.kerberos": "true", "connect.hdfs.principal": c.ClientPrincipal,
		"connect.hdfs.keytab": c.ClientKeytab, "krb5.conf": c.Krb5Conf,
		"hdfs.namenode.principal": c.NameNodePrincipal, "dfs.data.transfer.protection": c.Protection,
	}
	if c.CipherSuites != "" {
		p["dfs.encrypt.data.transfer.cipher.suites"] = c.CipherSuites
	}
	return p
}

// WrongKeytab writes a keytab for c's client principal made from another
// password than the KDC's: a login with it fails.
func WrongKeytab(t testing.TB, c testenv.KerberizedHDFS) string {
	t.Helper()
	user, _, _ := strings.Cut(c.ClientPrincipal, "@")
	kt := keytab.New()
	if err := kt.AddEntry(user, c.Realm, "not-the-password", time.Now(), 1, etypeID.AES128_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "wrong.keytab")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// hdfsBase connects to addr and makes a fresh base directory
// /tributary-test/<test>-<random>, removed (with the connection closed)
// when t ends.
func hdfsBase(t testing.TB, addr string, opts filesys.HDFSOptions) (filesys.FS, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fsys, err := filesys.OpenHDFSWith(ctx, []string{addr}, "tributary", opts)
	if err != nil {
		t.Fatalf("connecting to the test HDFS at %s: %v", addr, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	base := "/tributary-test/" + name + "-" + hex.EncodeToString(b[:])
	if err := fsys.MkdirAll(base); err != nil {
		t.Fatalf("hdfs mkdir %s: %v", base, err)
	}
	t.Cleanup(func() {
		if err := fsys.RemoveAll(base); err != nil {
			t.Errorf("hdfs: removing %s: %v", base, err)
		}
		fsys.Close()
	})
	return fsys, base, "hdfs://tributary@" + addr + base
}

// Run runs the conformance suite; newFS gives each subtest a file system
// and an empty base directory in it.
func Run(t *testing.T, newFS func(t *testing.T) (filesys.FS, string)) {
	tests := []struct {
		name string
		fn   func(t *testing.T, fsys filesys.FS, base string)
	}{
		{"CreateReadBack", testCreateReadBack},
		{"CreateExisting", testCreateExisting},
		{"CreateMakesParents", testCreateMakesParents},
		{"RenameReplaces", testRenameReplaces},
		{"RenameMissing", testRenameMissing},
		{"RenameOntoItself", testRenameOntoItself},
		{"RenameDirectory", testRenameDirectory},
		{"Remove", testRemove},
		{"RemoveAll", testRemoveAll},
		{"ReadDirSorted", testReadDirSorted},
		{"StatMissing", testStatMissing},
		{"MkdirAllIdempotent", testMkdirAll},
		{"LargeFile", testLargeFile},
		{"EmptyFile", testEmptyFile},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys, base := newFS(t)
			tc.fn(t, fsys, base)
		})
	}
}

func write(t *testing.T, fsys filesys.FS, name, data string) {
	t.Helper()
	if err := filesys.WriteFile(fsys, name, []byte(data)); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
}

func read(t *testing.T, fsys filesys.FS, name string) string {
	t.Helper()
	b, err := filesys.ReadFile(fsys, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func testCreateReadBack(t *testing.T, fsys filesys.FS, base string) {
	name := path.Join(base, "a.txt")
	write(t, fsys, name, "hello, file")
	if got := read(t, fsys, name); got != "hello, file" {
		t.Fatalf("read back %q", got)
	}
	fi, err := fsys.Stat(name)
	if err != nil || fi.Size() != 11 || fi.IsDir() || fi.Name() != "a.txt" {
		t.Fatalf("stat: %v %+v", err, fi)
	}
}

func testCreateExisting(t *testing.T, fsys filesys.FS, base string) {
	name := path.Join(base, "a")
	write(t, fsys, name, "first")
	if _, err := fsys.Create(name); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("create over an existing file: %v, want ErrExist", err)
	}
	if got := read(t, fsys, name); got != "first" {
		t.Fatalf("existing file changed: %q", got)
	}
}

func testCreateMakesParents(t *testing.T, fsys filesys.FS, base string) {
	name := path.Join(base, "x", "y", "z.bin")
	write(t, fsys, name, "z")
	fi, err := fsys.Stat(path.Join(base, "x", "y"))
	if err != nil || !fi.IsDir() {
		t.Fatalf("parent: %v %v", err, fi)
	}
}

func testRenameReplaces(t *testing.T, fsys filesys.FS, base string) {
	a, b := path.Join(base, "a"), path.Join(base, "b")
	write(t, fsys, a, "new")
	write(t, fsys, b, "old")
	if err := fsys.Rename(a, b); err != nil {
		t.Fatalf("rename onto an existing file: %v (must replace)", err)
	}
	if got := read(t, fsys, b); got != "new" {
		t.Fatalf("destination holds %q, want the source's bytes", got)
	}
	if _, err := fsys.Stat(a); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("source still there: %v", err)
	}
}

func testRenameMissing(t *testing.T, fsys filesys.FS, base string) {
	if err := fsys.Rename(path.Join(base, "nope"), path.Join(base, "b")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("rename of a missing source: %v, want ErrNotExist", err)
	}
	a := path.Join(base, "a")
	write(t, fsys, a, "a")
	if err := fsys.Rename(a, path.Join(base, "no", "dir", "b")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("rename into a missing directory: %v, want ErrNotExist", err)
	}
	if got := read(t, fsys, a); got != "a" {
		t.Fatalf("source changed: %q", got)
	}
}

func testRenameOntoItself(t *testing.T, fsys filesys.FS, base string) {
	a := path.Join(base, "a")
	write(t, fsys, a, "same")
	if err := fsys.Rename(a, a); err != nil {
		t.Fatalf("rename onto itself: %v", err)
	}
	if got := read(t, fsys, a); got != "same" {
		t.Fatalf("file changed: %q", got)
	}
}

func testRenameDirectory(t *testing.T, fsys filesys.FS, base string) {
	write(t, fsys, path.Join(base, "d1", "f"), "f")
	if err := fsys.Rename(path.Join(base, "d1"), path.Join(base, "d2")); err != nil {
		t.Fatalf("rename dir: %v", err)
	}
	if got := read(t, fsys, path.Join(base, "d2", "f")); got != "f" {
		t.Fatalf("moved file holds %q", got)
	}
	// A file onto a directory fails on both: the directory is kept.
	write(t, fsys, path.Join(base, "g"), "g")
	if err := fsys.Rename(path.Join(base, "g"), path.Join(base, "d2")); err == nil {
		t.Fatal("rename of a file onto a directory succeeded")
	}
	if got := read(t, fsys, path.Join(base, "d2", "f")); got != "f" {
		t.Fatalf("directory content changed: %q", got)
	}
}

func testRemove(t *testing.T, fsys filesys.FS, base string) {
	a := path.Join(base, "d", "a")
	write(t, fsys, a, "a")
	if err := fsys.Remove(path.Join(base, "d")); err == nil {
		t.Fatal("Remove of a non-empty directory succeeded")
	}
	if err := fsys.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove(a); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Remove of a missing file: %v, want ErrNotExist", err)
	}
	if err := fsys.Remove(path.Join(base, "d")); err != nil {
		t.Fatalf("Remove of an empty dir: %v", err)
	}
	if ok, err := filesys.Exists(fsys, path.Join(base, "d")); ok || err != nil {
		t.Fatalf("dir still exists: %v %v", ok, err)
	}
}

func testRemoveAll(t *testing.T, fsys filesys.FS, base string) {
	write(t, fsys, path.Join(base, "t", "a", "1"), "1")
	write(t, fsys, path.Join(base, "t", "b"), "2")
	if err := fsys.RemoveAll(path.Join(base, "t")); err != nil {
		t.Fatal(err)
	}
	if ok, err := filesys.Exists(fsys, path.Join(base, "t")); ok || err != nil {
		t.Fatalf("tree still exists: %v %v", ok, err)
	}
	if err := fsys.RemoveAll(path.Join(base, "t")); err != nil {
		t.Fatalf("RemoveAll of a missing tree: %v", err)
	}
}

func testReadDirSorted(t *testing.T, fsys filesys.FS, base string) {
	for _, n := range []string{"c", "a", "b2", "b10"} {
		write(t, fsys, path.Join(base, "dir", n), n+n)
	}
	if err := fsys.MkdirAll(path.Join(base, "dir", "sub")); err != nil {
		t.Fatal(err)
	}
	list, err := fsys.ReadDir(path.Join(base, "dir"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fi := range list {
		names = append(names, fi.Name())
		if fi.Name() == "sub" != fi.IsDir() {
			t.Errorf("%s: IsDir %v", fi.Name(), fi.IsDir())
		}
		if !fi.IsDir() && fi.Size() != int64(2*len(fi.Name())) {
			t.Errorf("%s: size %d", fi.Name(), fi.Size())
		}
	}
	if want := []string{"a", "b10", "b2", "c", "sub"}; !slices.Equal(names, want) {
		t.Fatalf("ReadDir = %v, want %v", names, want)
	}
	if _, err := fsys.ReadDir(path.Join(base, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadDir of a missing dir: %v", err)
	}
}

func testStatMissing(t *testing.T, fsys filesys.FS, base string) {
	if _, err := fsys.Stat(path.Join(base, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat missing: %v", err)
	}
	if _, err := fsys.Open(path.Join(base, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open missing: %v", err)
	}
}

func testMkdirAll(t *testing.T, fsys filesys.FS, base string) {
	d := path.Join(base, "m", "n")
	for range 2 {
		if err := fsys.MkdirAll(d); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := fsys.Stat(d)
	if err != nil || !fi.IsDir() {
		t.Fatalf("stat: %v %v", err, fi)
	}
}

func testLargeFile(t *testing.T, fsys filesys.FS, base string) {
	const size = 3<<20 + 17
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	name := path.Join(base, "large")
	w, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < size; off += 100_000 {
		if _, err := w.Write(data[off:min(off+100_000, size)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != size || string(got) != string(data) {
		t.Fatalf("read back %d bytes, differing from the %d written", len(got), size)
	}
}

func testEmptyFile(t *testing.T, fsys filesys.FS, base string) {
	name := path.Join(base, "empty")
	write(t, fsys, name, "")
	if got := read(t, fsys, name); got != "" {
		t.Fatalf("empty file reads %q", got)
	}
	if err := fsys.Rename(name, name+"2"); err != nil {
		t.Fatalf("rename of an empty file: %v", err)
	}
}
