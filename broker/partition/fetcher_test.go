package partition

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestBackoffAfterLeaderBehind: a leader that does not serve a partition
// yet is asked again after 2 ms, doubling; other errors start at 50 ms;
// both stop at 1 s.
func TestBackoffAfterLeaderBehind(t *testing.T) {
	behind := fmt.Errorf("%w: %w", errLeaderBehind, kerr.NotLeaderForPartition)
	var d time.Duration
	var got []time.Duration
	for range 11 {
		d = backoffAfter(d, behind)
		got = append(got, d)
	}
	want := []time.Duration{2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("behind back-offs %v, want %v ms", got, want)
		}
	}
	if d := backoffAfter(0, kerr.OffsetOutOfRange); d != 50*time.Millisecond {
		t.Fatalf("other errors start at %v, want 50ms", d)
	}
	if d := backoffAfter(0, nil); d != 50*time.Millisecond {
		t.Fatalf("no progress starts at %v, want 50ms", d)
	}
	for _, c := range []int16{kerr.NotLeaderForPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownLeaderEpoch.Code} {
		if !leaderBehind(c) {
			t.Fatalf("code %d is not leader-behind", c)
		}
	}
	if leaderBehind(kerr.FencedLeaderEpoch.Code) || leaderBehind(0) {
		t.Fatal("FENCED_LEADER_EPOCH or no error counted as leader-behind")
	}
}
