package filesys

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// FS is a file system the loader and the jobs write to. See the package
// documentation for the exact semantics of each method.
type FS interface {
	// Create opens a new file for writing, creating missing parents; it
	// fails if the name exists.
	Create(name string) (io.WriteCloser, error)
	// Open opens a file for reading.
	Open(name string) (io.ReadCloser, error)
	// Rename moves from to to, replacing an existing file at to.
	Rename(from, to string) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes name and everything below it; missing is fine.
	RemoveAll(name string) error
	// MkdirAll creates a directory and its missing parents.
	MkdirAll(name string) error
	// ReadDir lists a directory, sorted by name.
	ReadDir(name string) ([]fs.FileInfo, error)
	// Stat describes a file or directory.
	Stat(name string) (fs.FileInfo, error)
	// Close releases the connection (HDFS); the FS is unusable after.
	Close() error
}

// Open opens the file system a URI names and returns it with the base
// path the URI points at inside it.
func Open(ctx context.Context, uri string) (FS, string, error) {
	return OpenWith(ctx, uri, HDFSOptions{})
}

// OpenWith is Open with the options of an hdfs:// URI (Kerberos, data
// transfer protection; see HDFSOptions); other URIs ignore them.
func OpenWith(ctx context.Context, uri string, opts HDFSOptions) (FS, string, error) {
	switch {
	case strings.HasPrefix(uri, "hdfs://"):
		return openHDFS(ctx, uri, opts)
	case strings.HasPrefix(uri, "file://"):
		u, err := url.Parse(uri)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %q: %v", ErrBadURI, uri, err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, "", fmt.Errorf("%w: %q: file URIs name no host (use file:///abs/path)", ErrBadURI, uri)
		}
		if u.Path == "" {
			return nil, "", fmt.Errorf("%w: %q: no path", ErrBadURI, uri)
		}
		return Local(), filepath.Clean(u.Path), nil
	case strings.Contains(uri, "://"):
		return nil, "", fmt.Errorf("%w: %q: scheme must be hdfs:// or file://", ErrBadURI, uri)
	case uri == "":
		return nil, "", fmt.Errorf("%w: empty", ErrBadURI)
	default:
		abs, err := filepath.Abs(uri)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %q: %v", ErrBadURI, uri, err)
		}
		return Local(), abs, nil
	}
}

// WriteFile creates name (failing if it exists) with data.
func WriteFile(fsys FS, name string, data []byte) error {
	w, err := fsys.Create(name)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// ReadFile reads a whole file.
func ReadFile(fsys FS, name string) ([]byte, error) {
	r, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Exists reports whether name exists; errors other than not-exist are
// returned.
func Exists(fsys FS, name string) (bool, error) {
	_, err := fsys.Stat(name)
	if err == nil {
		return true, nil
	}
	if isNotExist(err) {
		return false, nil
	}
	return false, err
}

func isNotExist(err error) bool { return err != nil && (os.IsNotExist(err) || errorsIsNotExist(err)) }
