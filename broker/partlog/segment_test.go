package partlog

import "testing"

func TestAddSpan(t *testing.T) {
	var ss []span
	for _, n := range []span{{0, 10}, {10, 20}, {30, 40}, {50, 60}, {20, 30}, {5, 55}} {
		ss = addSpan(ss, n)
	}
	if len(ss) != 1 || ss[0] != (span{0, 60}) {
		t.Fatalf("spans %v", ss)
	}
	ss = addSpan(ss, span{70, 80})
	if !covered(ss, 10, 60) || covered(ss, 55, 75) || !covered(ss, 70, 80) || coveredUntil(ss, 65) != 65 || coveredUntil(ss, 3) != 60 {
		t.Fatalf("spans %v", ss)
	}
}
