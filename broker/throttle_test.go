package broker

import (
	"testing"
	"time"
)

func TestThrottleBucket(t *testing.T) {
	now := time.Unix(0, 0)
	q := newReplicationThrottle(func() time.Time { return now })
	if q.allowance(true) != -1 {
		t.Fatal("unthrottled by default")
	}
	q.setRates(1000, 0)
	if a := q.allowance(true); a != 1000 {
		t.Fatalf("allowance %d, want a full second's worth", a)
	}
	q.record(true, 3000)
	if a, w := q.allowance(true), q.wait(true); a != 0 || w < 2*time.Second {
		t.Fatalf("in debt of 2000 at 1000/s: allowance %d, wait %v", a, w)
	}
	now = now.Add(2500 * time.Millisecond)
	if a := q.allowance(true); a != 500 {
		t.Fatalf("after 2.5 s: allowance %d, want 500", a)
	}
	if q.allowance(false) != -1 {
		t.Fatal("follower bucket throttled without a rate")
	}
}
