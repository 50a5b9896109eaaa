package entityconfig

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
)

func TestSanitizeRoundTrip(t *testing.T) {
	for name, want := range map[string]string{
		"alice": "alice", "CN=a b*": "CN%3Da%20b%2A", "<default>": "%3Cdefault%3E", "ü": "%C3%BC",
	} {
		if got := Sanitize(name); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", name, got, want)
		}
		if back, err := Desanitize(want); err != nil || back != name {
			t.Errorf("Desanitize(%q) = %q %v", want, back, err)
		}
	}
	if _, err := Desanitize("%zz"); err == nil {
		t.Error("a bad escape desanitized")
	}
}

// TestUpdateNotifyFollow: Update keeps other writers' keys, creates the
// node with Kafka's JSON and writes a notification that Follow reports
// after its load; an empty parent node reads as an empty config.
func TestUpdateNotifyFollow(t *testing.T) {
	srv := memcoord.NewServer()
	s := srv.Connect(memcoord.Config{})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := Update(ctx, s, "users/alice/clients/app", false, func(cfg map[string]string) error {
		cfg["producer_byte_rate"] = "1024"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if cfg, version, err := Read(ctx, s, "users/alice"); err != nil || len(cfg) != 0 || version < 0 {
		t.Fatalf("the empty parent users/alice: %v %d %v", cfg, version, err)
	}
	for _, kv := range [][2]string{{"SCRAM-SHA-256", "x"}, {"consumer_byte_rate", "5"}} {
		if _, err := Update(ctx, s, "users/alice", false, func(cfg map[string]string) error {
			cfg[kv[0]] = kv[1]
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	data, _, err := s.Get(ctx, "/config/users/alice")
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Version int               `json:"version"`
		Config  map[string]string `json:"config"`
	}
	if err := json.Unmarshal(data, &rec); err != nil || rec.Version != 1 || rec.Config["SCRAM-SHA-256"] != "x" || rec.Config["consumer_byte_rate"] != "5" {
		t.Fatalf("node %s: %v", data, err)
	}

	changed := make(chan string, 16)
	loaded := make(chan struct{})
	fctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	fs := srv.Connect(memcoord.Config{})
	defer fs.Close()
	go func() {
		done <- Follow(fctx, fs, func(context.Context) error {
			close(loaded)
			return nil
		}, func(_ context.Context, path string) error {
			changed <- path
			return nil
		})
	}()
	<-loaded
	if _, err := s.Create(ctx, coord.Join(ChangesPath, ChangePrefix), []byte("not json"), coord.PersistentSequential); err != nil {
		t.Fatal(err)
	}
	if err := Notify(ctx, s, "clients/loader"); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-changed:
		if p != "clients/loader" {
			t.Fatalf("Follow reported %q first, want clients/loader (older notifications are the load's, bad ones skipped)", p)
		}
	case <-ctx.Done():
		t.Fatal("Follow reported nothing")
	}
	stop()
	<-done
}
