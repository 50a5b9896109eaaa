package partition

import (
	"errors"
	"testing"
	"time"
)

func TestOpenFailuresBackOff(t *testing.T) {
	now := time.Unix(1000, 0)
	o := NewOpenFailures(func() time.Time { return now })
	k := Key{Topic: "t", ID: "id1", Partition: 3}
	if !o.Due(k) {
		t.Fatal("a partition that never failed is not due")
	}
	cause := errors.New("no descriptors")
	var told []error
	stop := o.Watch("t", func(err error) { told = append(told, err) })
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if got := o.Failed(k, cause); got != want {
			t.Fatalf("failure %d: back-off %v, want %v", i+1, got, want)
		}
		if o.Due(k) {
			t.Fatalf("failure %d: due at once", i+1)
		}
	}
	for range 10 {
		o.Failed(k, cause)
	}
	if got := o.Failed(k, cause); got != openRetryMax {
		t.Fatalf("back-off %v, want the cap %v", got, openRetryMax)
	}
	if len(told) != 14 || !errors.Is(told[0], ErrOpen) || !errors.Is(told[0], cause) {
		t.Fatalf("watcher told %d errors (first %v), want 14 wrapping ErrOpen and the cause", len(told), told[0])
	}
	stop()
	o.Failed(k, cause)
	if len(told) != 14 {
		t.Fatal("a stopped watcher was told")
	}
	if err := o.LastError("t", 3); !errors.Is(err, cause) {
		t.Fatalf("LastError %v, want %v", err, cause)
	}
	// A re-created topic (another id) starts afresh.
	if !o.Due(Key{Topic: "t", ID: "id2", Partition: 3}) {
		t.Fatal("a new topic of the same name waits for the old one's back-off")
	}
	now = now.Add(openRetryMax)
	if !o.Due(k) {
		t.Fatal("not due after the back-off")
	}
	o.Succeeded(k)
	if err := o.LastError("t", 3); err != nil {
		t.Fatalf("LastError after success: %v", err)
	}
}
