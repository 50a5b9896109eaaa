package filesys

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/colinmarc/hdfs/v2"
)

// DefaultHDFSUser is the HDFS user when the URI names none and neither
// HADOOP_USER_NAME nor the OS user is known.
const DefaultHDFSUser = "tributary"

// closeRetries bounds the retries of a Close that reports the last block
// still replicating (the Java client retries too).
const closeRetries = 10

// ParseHDFSURI splits "hdfs://[user@]host:port[,host:port]/base" into
// NameNode addresses, user ("" if not given) and base path.
func ParseHDFSURI(uri string) (addrs []string, usr, base string, err error) {
	rest, ok := strings.CutPrefix(uri, "hdfs://")
	if !ok {
		return nil, "", "", fmt.Errorf("%w: %q is not hdfs://", ErrBadURI, uri)
	}
	hosts, p, _ := strings.Cut(rest, "/")
	if u, h, ok := strings.Cut(hosts, "@"); ok {
		usr, hosts = u, h
	}
	for _, h := range strings.Split(hosts, ",") {
		if _, _, err := net.SplitHostPort(h); err != nil {
			return nil, "", "", fmt.Errorf("%w: %q: NameNode %q must be host:port", ErrBadURI, uri, h)
		}
		addrs = append(addrs, h)
	}
	return addrs, usr, path.Clean("/" + p), nil
}

func openHDFS(ctx context.Context, uri string, opts HDFSOptions) (FS, string, error) {
	addrs, usr, base, err := ParseHDFSURI(uri)
	if err != nil {
		return nil, "", err
	}
	if usr == "" {
		usr = os.Getenv("HADOOP_USER_NAME")
	}
	if usr == "" {
		if u, err := user.Current(); err == nil {
			usr = u.Username
		} else {
			usr = DefaultHDFSUser
		}
	}
	fsys, err := OpenHDFSWith(ctx, addrs, usr, opts)
	if err != nil {
		return nil, "", err
	}
	return fsys, base, nil
}

// OpenHDFS connects to the NameNode(s) as user and checks that it answers.
func OpenHDFS(ctx context.Context, addrs []string, usr string) (FS, error) {
	return OpenHDFSWith(ctx, addrs, usr, HDFSOptions{})
}

type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// OpenHDFSWith is OpenHDFS with client options (Kerberos, data transfer
// protection), validated first. With Kerberos it logs in from the keytab
// before connecting, so a wrong keytab fails here with ErrKerberos.
func OpenHDFSWith(ctx context.Context, addrs []string, usr string, opts HDFSOptions) (FS, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	dial := (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	gate := &keyGate{}
	copts := hdfs.ClientOptions{Addresses: addrs, User: usr, NamenodeDialFunc: dial, DatanodeDialFunc: dial,
		DataTransferProtection: opts.DataTransferProtection}
	if opts.namenodeDial != nil {
		copts.NamenodeDialFunc = opts.namenodeDial
	}
	var login *kerberosLogin
	if opts.Kerberos != nil {
		var err error
		if login, err = newKerberosLogin(ctx, opts.Kerberos); err != nil {
			return nil, fmt.Errorf("hdfs %s: %w", strings.Join(addrs, ","), err)
		}
		copts.KerberosClient = login.client
		copts.KerberosServicePrincipleName, _, _ = strings.Cut(opts.Kerberos.NameNodePrincipal, "@")
	}
	type result struct {
		c   *hdfs.Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := hdfs.NewClient(copts)
		if err == nil {
			var defaults hdfs.ServerDefaults
			// ServerDefaults also fills the client's cache of them, read
			// unlocked by every later datanode dial.
			if defaults, err = c.ServerDefaults(); err != nil {
				c.Close()
			} else {
				gate.on = opts.DataTransferProtection != "" || defaults.EncryptDataTransfer
				gate.blockSize = defaults.BlockSize
			}
		}
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			login.close()
			return nil, fmt.Errorf("hdfs %s: %w", strings.Join(addrs, ","), r.err)
		}
		return hdfsFS{r.c, login, gate}, nil
	case <-ctx.Done():
		go func() {
			if r := <-done; r.c != nil {
				r.c.Close()
			}
			login.close()
		}()
		return nil, fmt.Errorf("hdfs %s: %w", strings.Join(addrs, ","), ctx.Err())
	}
}

type hdfsFS struct {
	c     *hdfs.Client
	login *kerberosLogin // nil without Kerberos
	gate  *keyGate
}

// keyGate serializes the file operations that may open a datanode
// connection when data transfer is protected. colinmarc/hdfs v2.4.0 then
// asks the NameNode for a data encryption key before every such connection
// and stores the answer in a Client field without a lock (the answer is
// nil unless dfs.encrypt.data.transfer is set, so it asks every time), and
// two files' blocks started at once race on that field. Without
// protection the gate is off: the server defaults, the only other field a
// datanode dial reads, are fetched once at open.
type keyGate struct {
	mu        sync.Mutex
	on        bool  // set at open, read-only afterwards
	blockSize int64 // the NameNode's default, the size of the blocks Create makes
}

// do runs f, alone when the gate is on and dials is true.
func (g *keyGate) do(dials bool, f func()) {
	if g.on && dials {
		g.mu.Lock()
		defer g.mu.Unlock()
	}
	f()
}

func (h hdfsFS) Create(name string) (io.WriteCloser, error) {
	// Parents usually exist: try first, make them only when missing (a
	// NameNode round trip saved per file).
	w, err := h.c.Create(name)
	if errors.Is(err, fs.ErrNotExist) {
		if err := h.c.MkdirAll(path.Dir(name), 0o755); err != nil {
			return nil, err
		}
		w, err = h.c.Create(name)
	}
	if err != nil {
		return nil, err
	}
	return &hdfsWriter{FileWriter: w, gate: h.gate}, nil
}

type hdfsWriter struct {
	*hdfs.FileWriter
	gate    *keyGate
	written int64
}

func (w *hdfsWriter) Write(b []byte) (n int, err error) {
	w.gate.do(w.startsBlock(len(b)), func() { n, err = w.FileWriter.Write(b) })
	w.written += int64(n)
	return n, err
}

// startsBlock reports whether writing n more bytes may start a block,
// which dials a datanode: the file's first write, or one that reaches a
// block boundary (colinmarc starts the next block as soon as one is full).
func (w *hdfsWriter) startsBlock(n int) bool {
	bs := w.gate.blockSize
	if bs <= 0 || w.written%bs == 0 {
		return true
	}
	return w.written/bs != (w.written+int64(n))/bs
}

// Close retries while the NameNode reports the last block replicating:
// the data is written but the file is not complete (and not visible in
// full) until a Close succeeds.
func (w *hdfsWriter) Close() error {
	delay := 50 * time.Millisecond
	var err error
	for range closeRetries {
		err = w.FileWriter.Close()
		if err == nil || !hdfs.IsErrReplicating(err) {
			return err
		}
		if w.written == 0 {
			// colinmarc/hdfs never gets an empty file completed (the
			// NameNode answers "not yet" to every retry); the file exists,
			// empty, and its lease expires by itself.
			return nil
		}
		time.Sleep(delay)
		delay *= 2
	}
	return err
}

func (h hdfsFS) Open(name string) (io.ReadCloser, error) {
	r, err := h.c.Open(name)
	if err != nil {
		return nil, err
	}
	return &hdfsReader{FileReader: r, gate: h.gate}, nil
}

// hdfsReader is a FileReader (Seek, Stat and the rest) whose reads, which
// may dial datanodes, pass the key gate (readers are few: compaction and
// readback, not the loader).
type hdfsReader struct {
	*hdfs.FileReader
	gate *keyGate
}

func (r *hdfsReader) Read(b []byte) (n int, err error) {
	r.gate.do(true, func() { n, err = r.FileReader.Read(b) })
	return n, err
}

func (r *hdfsReader) ReadAt(b []byte, off int64) (n int, err error) {
	r.gate.do(true, func() { n, err = r.FileReader.ReadAt(b, off) })
	return n, err
}

func (h hdfsFS) Rename(from, to string) error {
	if from == to {
		// colinmarc reports ErrExist for a rename onto itself; the local
		// rename is a no-op. Keep one behaviour: the no-op.
		_, err := h.c.Stat(from)
		return err
	}
	return h.c.Rename(from, to)
}

func (h hdfsFS) Remove(name string) error    { return h.c.Remove(name) }
func (h hdfsFS) RemoveAll(name string) error { return h.c.RemoveAll(name) }
func (h hdfsFS) MkdirAll(name string) error  { return h.c.MkdirAll(name, 0o755) }

func (h hdfsFS) ReadDir(name string) ([]fs.FileInfo, error) {
	fi, err := h.c.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	list, err := h.c.ReadDir(name)
	if err != nil {
		return nil, err
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name() < list[j].Name() })
	return list, nil
}

func (h hdfsFS) Stat(name string) (fs.FileInfo, error) { return h.c.Stat(name) }

func (h hdfsFS) Close() error {
	err := h.c.Close()
	h.login.close()
	return err
}

func errorsIsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
