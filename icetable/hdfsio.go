package icetable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"sync"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/properties"
)

// iceberg-go has no HDFS FileIO: hdfs:// locations go through filesys (the
// loader's HDFS client, Kerberos included). The HDFS settings travel in the
// catalog properties as filesys.HDFSOptions.Properties spells them.
func init() {
	icebergio.Register("hdfs", openHDFSIO)
}

// hdfsClients holds one client per NameNode address and settings: tables
// are loaded at every commit, and a connection (a Kerberos login) each
// time would be slow. Clients live as long as the process.
var hdfsClients = struct {
	sync.Mutex
	m map[string]filesys.FS
}{m: map[string]filesys.FS{}}

func openHDFSIO(ctx context.Context, u *url.URL, props map[string]string) (icebergio.IO, error) {
	opts := filesys.HDFSOptionsFromProperties(properties.New(props))
	okey, _ := json.Marshal(opts)
	root := "hdfs://" + u.User.String()
	if u.User != nil {
		root += "@"
	}
	root += u.Host + "/"
	key := root + string(okey)
	hdfsClients.Lock()
	defer hdfsClients.Unlock()
	fsys, ok := hdfsClients.m[key]
	if !ok {
		var err error
		fsys, _, err = filesys.OpenWith(ctx, root, opts)
		if err != nil {
			return nil, fmt.Errorf("icetable: hdfs %s: %w", u.Host, err)
		}
		hdfsClients.m[key] = fsys
	}
	return hdfsIO{fsys: fsys}, nil
}

// hdfsIO is an iceberg-go FileIO over a filesys.FS; names are full
// hdfs:// URIs.
type hdfsIO struct {
	fsys filesys.FS
}

func pathOf(name string) (string, error) {
	u, err := url.Parse(name)
	if err != nil {
		return "", err
	}
	if u.Scheme != "hdfs" && u.Scheme != "" {
		return "", fmt.Errorf("icetable: %q is not an hdfs:// location", name)
	}
	return u.Path, nil
}

func (h hdfsIO) Open(name string) (icebergio.File, error) {
	p, err := pathOf(name)
	if err != nil {
		return nil, err
	}
	info, err := h.fsys.Stat(p)
	if err != nil {
		return nil, err
	}
	rc, err := h.fsys.Open(p)
	if err != nil {
		return nil, err
	}
	ra, ok := rc.(io.ReaderAt)
	if !ok {
		rc.Close()
		return nil, fmt.Errorf("icetable: %s: reader without ReadAt", name)
	}
	return &hdfsFile{rc: rc, ra: ra, info: info}, nil
}

func (h hdfsIO) ReadFile(name string) ([]byte, error) {
	p, err := pathOf(name)
	if err != nil {
		return nil, err
	}
	return filesys.ReadFile(h.fsys, p)
}

func (h hdfsIO) Remove(name string) error {
	p, err := pathOf(name)
	if err != nil {
		return err
	}
	return h.fsys.Remove(p)
}

func (h hdfsIO) Create(name string) (icebergio.FileWriter, error) {
	p, err := pathOf(name)
	if err != nil {
		return nil, err
	}
	w, err := h.fsys.Create(p)
	if err != nil {
		return nil, err
	}
	return hdfsWriter{w}, nil
}

func (h hdfsIO) WriteFile(name string, data []byte) error {
	p, err := pathOf(name)
	if err != nil {
		return err
	}
	return filesys.WriteFile(h.fsys, p, data)
}

func (h hdfsIO) Stat(name string) (fs.FileInfo, error) {
	p, err := pathOf(name)
	if err != nil {
		return nil, err
	}
	return h.fsys.Stat(p)
}

type hdfsWriter struct{ io.WriteCloser }

func (w hdfsWriter) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{w.WriteCloser}, r)
}

// hdfsFile is a read-only file with a position, over ReadAt. colinmarc's
// reader is not safe for concurrent use, and Parquet readers read column
// chunks in parallel: mu serializes.
type hdfsFile struct {
	mu   sync.Mutex
	rc   io.ReadCloser
	ra   io.ReaderAt
	info fs.FileInfo
	off  int64
}

func (f *hdfsFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *hdfsFile) Close() error               { return f.rc.Close() }

func (f *hdfsFile) Read(b []byte) (int, error) {
	if f.off >= f.info.Size() {
		return 0, io.EOF
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.ra.ReadAt(b, f.off)
	f.off += int64(n)
	if errors.Is(err, io.EOF) && n > 0 {
		err = nil
	}
	return n, err
}

func (f *hdfsFile) ReadAt(b []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ra.ReadAt(b, off)
}

func (f *hdfsFile) Seek(off int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += f.off
	case io.SeekEnd:
		off += f.info.Size()
	default:
		return 0, fmt.Errorf("icetable: seek whence %d", whence)
	}
	if off < 0 {
		return 0, fmt.Errorf("icetable: seek to %d", off)
	}
	f.off = off
	return off, nil
}
