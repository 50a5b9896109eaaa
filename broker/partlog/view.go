package partlog

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
)

// View is a byte range of one segment file holding whole record batches,
// as returned by Read. It keeps the segment's file open until Release, even
// if retention deletes the segment meanwhile or the FileCache needs the slot.
type View struct {
	seg      *segment
	file     *os.File
	pos, n   int64
	released atomic.Bool
}

// Len returns the number of bytes in the view.
func (v *View) Len() int64 { return v.n }

// Truncate shortens the view to n bytes (a fetch may send a partial batch,
// as Kafka does when a batch exceeds the response limit).
func (v *View) Truncate(n int64) {
	if n >= 0 && n < v.n {
		v.n = n
	}
}

// Release drops the segment reference. Safe to call more than once.
func (v *View) Release() {
	if v.seg != nil && v.released.CompareAndSwap(false, true) {
		v.seg.file.release()
		v.seg.release()
	}
}

// Bytes reads the view into a new slice.
func (v *View) Bytes() ([]byte, error) {
	if v.n == 0 {
		return nil, nil
	}
	if v.released.Load() {
		return nil, ErrClosed
	}
	b := make([]byte, v.n)
	if _, err := v.file.ReadAt(b, v.pos); err != nil {
		return nil, fmt.Errorf("log: read view: %w", err)
	}
	return b, nil
}

// WriteTo writes the view to w. If w exposes its descriptor (syscall.Conn,
// e.g. *net.TCPConn) the bytes go with sendfile(2) from an explicit file
// offset, never from the shared file position; otherwise they are copied.
func (v *View) WriteTo(w io.Writer) (int64, error) {
	n, _, err := v.SendTo(w)
	return n, err
}

// SendTo is WriteTo that also reports the path taken: zeroCopy is true when
// the bytes were handed to sendfile(2) (all n of them, even if it then
// failed part way), false when they were copied through user space, either
// because w has no descriptor or because the kernel refused sendfile for it.
// An empty view sends nothing and reports false.
func (v *View) SendTo(w io.Writer) (n int64, zeroCopy bool, err error) {
	if v.n == 0 {
		return 0, false, nil
	}
	if v.released.Load() {
		return 0, false, ErrClosed
	}
	if sc, ok := w.(syscall.Conn); ok {
		n, err, handled := v.sendfile(sc)
		if handled {
			return n, true, err
		}
	}
	n, err = io.Copy(w, io.NewSectionReader(v.file, v.pos, v.n))
	if err == nil && n < v.n {
		// The file got shorter under the view (TruncateTo): a short
		// write must not pass for the whole view.
		err = fmt.Errorf("log: read view: %w", io.ErrUnexpectedEOF)
	}
	return n, false, err
}

// sendfile returns handled=false if the kernel refused before sending
// anything (e.g. a destination sendfile does not support), so the caller
// can fall back to copying.
func (v *View) sendfile(sc syscall.Conn) (int64, error, bool) {
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	src, err := v.file.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	off, remaining := v.pos, v.n
	var serr error
	unsupported := false
	cerr := src.Control(func(srcFd uintptr) {
		werr := rc.Write(func(dstFd uintptr) bool {
			for remaining > 0 {
				chunk := min(remaining, 1<<30)
				n, err := syscall.Sendfile(int(dstFd), int(srcFd), &off, int(chunk))
				if n > 0 {
					remaining -= int64(n)
				}
				switch {
				case err == syscall.EINTR:
					continue
				case err == syscall.EAGAIN:
					return false // wait until the socket is writable
				case err != nil:
					if remaining == v.n && (err == syscall.EINVAL || err == syscall.ENOSYS || err == syscall.EOPNOTSUPP) {
						unsupported = true
					}
					serr = err
					return true
				case n == 0:
					serr = io.ErrUnexpectedEOF // the file is shorter than the view
					return true
				}
			}
			return true
		})
		if serr == nil && werr != nil {
			serr = werr
		}
	})
	if unsupported {
		return 0, nil, false
	}
	if serr == nil {
		serr = cerr
	}
	if serr != nil {
		serr = fmt.Errorf("log: sendfile: %w", serr)
	}
	return v.n - remaining, serr, true
}
