package service

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path"
	"testing"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
)

// TestPartitionsEndpoint: /api/topics/{topic}/partitions serves the
// loader output's partitions with their states (a ready one with its
// _SUCCESS counts, a closed one waiting for the audit, an open one
// loading), and 404 without the loader output configured.
func TestPartitionsEndpoint(t *testing.T) {
	fsys, base := filesys.Local(), t.TempDir()
	h0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		dir := hours.Dir(base, "pv", h0.Add(time.Duration(i)*time.Hour))
		name := hours.LoaderFile{Topic: "pv", First: int64(i), Last: int64(i), SchemaID: 3, Format: hours.Avro}.Name()
		if err := filesys.WriteFile(fsys, path.Join(dir, name), []byte("x")); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			b, _ := json.Marshal(hours.Success{Version: 1, Topic: "pv", State: hours.StateReadyIncomplete, Basis: hours.BasisTimeout,
				Producer: 117, Loader: 100, Shortfall: 17})
			if err := filesys.WriteFile(fsys, path.Join(dir, hours.SuccessMarker), b); err != nil {
				t.Fatal(err)
			}
		}
	}
	get := func(r *Readiness) (int, []hours.HourReport) {
		t.Helper()
		svc, err := New(Config{Clusters: []Cluster{{Name: "c", Brokers: []string{"127.0.0.1:1"}}}, Dir: t.TempDir(),
			Listen: "127.0.0.1:0", Readiness: r})
		if err != nil {
			t.Fatal(err)
		}
		defer svc.store.Close()
		defer svc.ln.Close()
		srv := httptest.NewServer(svc.Handler())
		defer srv.Close()
		resp, err := http.Get(srv.URL + "/api/topics/pv/partitions")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rep []hours.HourReport
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, rep
	}
	if code, _ := get(nil); code != http.StatusNotFound {
		t.Fatalf("without the loader output: %d, want 404", code)
	}
	code, rep := get(&Readiness{FS: fsys, Base: base, Delay: time.Minute,
		ClosedThrough: func(context.Context) (time.Time, error) { return h0.Add(2*time.Hour + 30*time.Minute), nil }})
	if code != http.StatusOK || len(rep) != 3 {
		t.Fatalf("partitions: %d %+v", code, rep)
	}
	want := []string{hours.StateReadyIncomplete, hours.StateWaiting, hours.StateLoading}
	for i, r := range rep {
		if r.State != want[i] || !r.Start.Equal(h0.Add(time.Duration(i)*time.Hour)) || r.Files != 1 || r.SchemaID != 3 {
			t.Errorf("partition %d: %+v, want %s", i, r, want[i])
		}
	}
	if rep[0].Shortfall != 17 || rep[0].Producer != 117 || !rep[0].Audited || rep[0].Success == nil {
		t.Errorf("the ready-incomplete partition's counts: %+v", rep[0])
	}
}
