package config

import "testing"

func TestThrottledReplicasParse(t *testing.T) {
	tr, err := parseThrottledReplicas("0:1, 2:3")
	if err != nil || !tr.Includes(0, 1) || !tr.Includes(2, 3) || tr.Includes(0, 3) || tr.Includes(20, 1) {
		t.Fatalf("0:1,2:3 parsed to %+v (%v)", tr, err)
	}
	if tr, err := parseThrottledReplicas("*"); err != nil || !tr.Includes(7, 9) {
		t.Fatalf("* parsed to %+v (%v)", tr, err)
	}
	if tr, err := parseThrottledReplicas(""); err != nil || tr.Includes(0, 0) {
		t.Fatalf("empty parsed to %+v (%v)", tr, err)
	}
	for _, bad := range []string{"0", "a:1", "0:-1", "0:1,", "**"} {
		if _, err := parseThrottledReplicas(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
