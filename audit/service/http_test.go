package service

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHTTPAPI checks the JSON API's shapes, ranges and errors on the known
// data set of the dashboard test.
func TestHTTPAPI(t *testing.T) {
	s, t0 := knownService(t)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	code, body := get(t, srv.URL+"/api/topics")
	if code != 200 || strings.Join(strings.Fields(body), "") != `{"topics":["clicks","views"]}` {
		t.Fatalf("topics: %d %s", code, body)
	}
	from := t0.Add(10 * time.Minute).Format(time.RFC3339)
	code, body = get(t, srv.URL+"/api/topics/clicks/windows?from="+from)
	var reps []WindowReport
	if err := json.Unmarshal([]byte(body), &reps); code != 200 || err != nil || len(reps) != 2 {
		t.Fatalf("windows from %s: %d %v %s", from, code, err, body)
	}
	if !reps[0].WindowStart.Equal(t0.Add(10*time.Minute)) || reps[0].Status != StatusIncomplete ||
		reps[0].Counts["producer"] != 2000 || reps[0].Counts["lossy"] != 1983 || reps[0].Tiers[0].Missing != 17 {
		t.Fatalf("middle window: %+v", reps[0])
	}
	to := t0.Add(10 * time.Minute).UnixMilli()
	code, body = get(t, srv.URL+"/api/topics/clicks/windows?to="+strings.TrimSpace(jsonNum(to)))
	if err := json.Unmarshal([]byte(body), &reps); code != 200 || err != nil || len(reps) != 1 || !reps[0].WindowStart.Equal(t0) {
		t.Fatalf("windows to %d: %d %v %s", to, code, err, body)
	}
	code, body = get(t, srv.URL+"/api/topics/clicks/windows/"+from)
	var b Breakdown
	if err := json.Unmarshal([]byte(body), &b); code != 200 || err != nil ||
		b.Clusters["lossy"]["dc1"] != 1183 || b.Clusters["producer"]["dc2"] != 800 || len(b.Instances) != 6 {
		t.Fatalf("breakdown: %d %v %s", code, err, body)
	}
	if code, body = get(t, srv.URL+"/api/topics/clicks/windows/"+t0.Add(time.Hour).Format(time.RFC3339)); code != 404 {
		t.Fatalf("unknown window: %d %s", code, body)
	}
	if code, body = get(t, srv.URL+"/api/topics/clicks/windows?from=yesterday"); code != 400 || !strings.Contains(body, "from") {
		t.Fatalf("bad from: %d %s", code, body)
	}
	if code, body = get(t, srv.URL+"/api/topics/nothing/windows"); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("unknown topic: %d %s", code, body)
	}
	if code, body = get(t, srv.URL+"/"); code != 200 || !strings.Contains(body, "createElementNS") {
		t.Fatalf("dashboard: %d", code)
	}
	// Self-contained: no script, style or link fetched from anywhere; the
	// only URL is the SVG namespace.
	rest := strings.ReplaceAll(body, "http://www.w3.org/2000/svg", "")
	for _, bad := range []string{"http://", "https://", "<script src", "<link", "@import"} {
		if strings.Contains(rest, bad) {
			t.Fatalf("the dashboard contains %q", bad)
		}
	}
}

func jsonNum(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
