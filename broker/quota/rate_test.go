package quota

import (
	"math"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestMeterFirstWindowsAreAveragedOverNumMinusOne(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	m := NewMeter(Window{Num: 11, Size: time.Second})
	tags := Tags{Client: "loader"}
	// 5 MB at once against 1 MB/s: measured over the minimum span of 10 s
	// it is 0.5 MB/s, within the quota.
	if r, th := m.Record(tags, 1e6, 5e6, clk.now()); th != 0 || math.Abs(r-5e5) > 1 {
		t.Fatalf("rate %v throttle %v, want 5e5 and 0", r, th)
	}
	// 10 MB more: 1.5 MB/s over 10 s, so 5 s of silence brings it back
	// ((1.5-1)/1 x 10 s).
	r, th := m.Record(tags, 1e6, 1e7, clk.now())
	if math.Abs(r-1.5e6) > 1 || th != 5*time.Second {
		t.Fatalf("rate %v throttle %v, want 1.5e6 and 5s", r, th)
	}
	// Another client's usage is its own.
	if _, th := m.Record(Tags{Client: "other"}, 1e6, 1, clk.now()); th != 0 {
		t.Fatalf("other client throttled %v", th)
	}
}

func TestMeterSteadyRateTracksLimit(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	w := Window{Num: 11, Size: time.Second}
	m := NewMeter(w)
	tags := Tags{User: "alice"}
	const limit = 1e6
	// A client that sends 100 KB at a time and waits out every throttle:
	// over a minute it averages the limit.
	sent := 0.0
	start := clk.now()
	for clk.now().Sub(start) < 60*time.Second {
		_, th := m.Record(tags, limit, 1e5, clk.now())
		sent += 1e5
		clk.advance(time.Millisecond + th)
	}
	got := sent / clk.now().Sub(start).Seconds()
	// The first (num-1) windows' allowance is a burst on top: 10 s worth
	// over 60 s.
	if got < limit || got > limit*(1+10.0/60+0.05) {
		t.Fatalf("average %v over a minute, limit %v", got, limit)
	}
	// After a full window of silence the client's old usage is forgotten.
	clk.advance(time.Duration(w.Num) * w.Size)
	if r := m.Rate(tags, clk.now()); r != 0 {
		t.Fatalf("rate %v after %v idle, want 0", r, time.Duration(w.Num)*w.Size)
	}
}

func TestMeterUnrecord(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	m := NewMeter(Window{Num: 2, Size: time.Second})
	tags := Tags{Client: "c"}
	if _, th := m.Record(tags, 100, 300, clk.now()); th == 0 {
		t.Fatal("300 bytes in a 1 s span against 100/s not throttled")
	}
	m.Unrecord(tags, 300, clk.now())
	if r := m.Rate(tags, clk.now()); r != 0 {
		t.Fatalf("rate %v after unrecord, want 0", r)
	}
}

func TestThrottleCapsAndZeroLimit(t *testing.T) {
	w := Window{Num: 3, Size: time.Second}
	if got := throttle(1e9, 1, 2*time.Second, w); got != 3*time.Second {
		t.Fatalf("throttle %v, want the 3 s cap", got)
	}
	if got := throttle(1, 0, 2*time.Second, w); got != 3*time.Second {
		t.Fatalf("zero limit: throttle %v, want 3 s", got)
	}
	if got := throttle(0, 0, 2*time.Second, w); got != 0 {
		t.Fatalf("zero usage under a zero limit throttled %v", got)
	}
}
