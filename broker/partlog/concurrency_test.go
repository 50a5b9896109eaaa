package partlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// TestConcurrentAppendRead runs readers against a writer that rolls and
// applies retention; every read must return whole, valid batches with the
// values written at those offsets.
func TestConcurrentAppendRead(t *testing.T) {
	l := newLog(t, Config{SegmentBytes: 4000, IndexIntervalBytes: 300, RetentionBytes: 20000, RetentionMs: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const total = 2000
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < total && ctx.Err() == nil; i++ {
			if _, err := l.Append(logtest.NewBatch(fmt.Appendf(nil, "value-%d", i))); err != nil {
				errc <- err
				return
			}
			if i%200 == 0 {
				if _, err := l.ApplyRetention(); err != nil {
					errc <- err
					return
				}
			}
		}
	}()
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && l.EndOffset() < total; i++ {
				end := l.EndOffset()
				if end == 0 {
					continue
				}
				off := int64((i*7919 + r) % int(end))
				v, err := l.Read(off, 2000)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue
				}
				if err != nil {
					errc <- err
					return
				}
				b, err := v.Bytes()
				v.Release()
				if err != nil {
					errc <- err
					return
				}
				if _, _, err := ValidateBatch(b); err != nil {
					errc <- fmt.Errorf("read %d: %w", off, err)
					return
				}
				offs, vs := logtest.Values(b)
				for j, o := range offs {
					if string(vs[j]) != fmt.Sprintf("value-%d", o) {
						errc <- fmt.Errorf("offset %d holds %q", o, vs[j])
						return
					}
				}
				if offs[0] > off || offs[len(offs)-1] < off {
					errc <- fmt.Errorf("read %d returned offsets %d..%d", off, offs[0], offs[len(offs)-1])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("timed out at end offset %d", l.EndOffset())
	}
}

func TestClosedLog(t *testing.T) {
	l := newLog(t, Config{})
	mustAppend(t, l, logtest.NewBatch([]byte("a")))
	v, err := l.Read(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := v.Bytes(); err != nil || len(b) == 0 {
		t.Fatalf("view after close: %v", err)
	}
	v.Release()
	v.Release()
	if _, err := l.Append(logtest.NewBatch([]byte("b"))); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if _, err := l.Read(0, 100); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	if err := l.Flush(); !errors.Is(err, ErrClosed) {
		t.Fatalf("flush after close: %v", err)
	}
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
}
