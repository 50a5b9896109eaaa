package filesys

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Local returns the local file system.
func Local() FS { return localFS{} }

type localFS struct{}

func (localFS) Create(name string) (io.WriteCloser, error) {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return syncCloser{f}, nil
}

// syncCloser fsyncs on Close: a file is complete once Close returns, as
// on HDFS, even across a machine crash.
type syncCloser struct{ *os.File }

func (s syncCloser) Close() error {
	if err := s.File.Sync(); err != nil {
		s.File.Close()
		return err
	}
	return s.File.Close()
}

func (localFS) Open(name string) (io.ReadCloser, error) { return os.Open(name) }

func (localFS) Rename(from, to string) error {
	if fi, err := os.Stat(to); err == nil && fi.IsDir() {
		// HDFS refuses a file onto a directory; POSIX would too for a
		// file, but be explicit so both behave the same for directories.
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: errors.New("destination is a directory")}
	}
	if err := os.Rename(from, to); err != nil {
		return err
	}
	return syncDir(filepath.Dir(to))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (localFS) Remove(name string) error    { return os.Remove(name) }
func (localFS) RemoveAll(name string) error { return os.RemoveAll(name) }
func (localFS) MkdirAll(name string) error  { return os.MkdirAll(name, 0o755) }

func (localFS) ReadDir(name string) ([]fs.FileInfo, error) {
	entries, err := os.ReadDir(name)
	if err != nil {
		return nil, err
	}
	out := make([]fs.FileInfo, 0, len(entries))
	for _, e := range entries {
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, fi)
	}
	return out, nil
}

func (localFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }
func (localFS) Close() error                          { return nil }
