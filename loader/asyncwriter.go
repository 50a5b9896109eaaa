package loader

import (
	"io"
	"sync"
)

// asyncWriter hands writes to a goroutine, so that the round trips of many
// open files (on HDFS: block allocation, DataNode pipeline set-up and
// acknowledgements) overlap instead of adding up in the loop that reads
// the partitions. Write copies its argument; at most depth writes wait.
// The first error is returned by a later Write or by Close.
type asyncWriter struct {
	w    io.WriteCloser
	ch   chan *[]byte
	done chan struct{}
	mu   sync.Mutex
	err  error
	// size counts the bytes Write accepted: the file's size once Close
	// returned nil. Only the writing goroutine touches it.
	size int64
}

const asyncDepth = 4

// bufPool recycles the copies Write makes (container blocks, mostly).
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, blockBytes); return &b }}

func newAsyncWriter(w io.WriteCloser) *asyncWriter {
	a := &asyncWriter{w: w, ch: make(chan *[]byte, asyncDepth), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for b := range a.ch {
			if a.failed() == nil {
				if _, err := a.w.Write(*b); err != nil {
					a.mu.Lock()
					a.err = err
					a.mu.Unlock()
				}
			}
			bufPool.Put(b)
		}
	}()
	return a
}

func (a *asyncWriter) failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *asyncWriter) Write(b []byte) (int, error) {
	if err := a.failed(); err != nil {
		return 0, err
	}
	buf := bufPool.Get().(*[]byte)
	*buf = append((*buf)[:0], b...)
	a.size += int64(len(b))
	a.ch <- buf
	return len(b), nil
}

// Close waits for the queued writes, then closes the file.
func (a *asyncWriter) Close() error {
	close(a.ch)
	<-a.done
	if err := a.failed(); err != nil {
		a.w.Close()
		return err
	}
	return a.w.Close()
}
