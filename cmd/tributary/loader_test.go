package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/internal/brokertest"
	"github.com/tributary/tributary/internal/testproc"
	"github.com/tributary/tributary/schema/registry"
)

// TestLoaderRunCommand runs `tributary loader run` on a properties file:
// exit 0, the summary line, the --summary-json file, the data; then a bad
// configuration fails naming the key.
func TestLoaderRunCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := brokertest.New(t)
	reg, err := registry.New(registry.NewMemStore(), registry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()
	rc, _ := serde.NewRegistryClient(serde.ClientConfig{URL: srv.URL})
	ser := serde.NewSerializer(rc, serde.SerializerConfig{})
	b.CreateTopic(t, "clicks", 2)
	cl := b.Client(t)
	const sch = `{"type":"record","name":"Click","fields":[{"name":"n","type":"long"}]}`
	for i := range 100 {
		v, err := ser.Encode(ctx, "clicks-value", sch, map[string]any{"n": int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks", Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	dir := t.TempDir()
	props := map[string]string{"name": "hourly", "bootstrap.servers": b.Addr(), "schema.registry.url": srv.URL,
		"topics": "click.*", "output.uri": "file://" + out, "audit.enable": "false"}
	conf := testproc.WriteProperties(t, dir, "loader.properties", props)
	summary := filepath.Join(dir, "summary.json")
	var stdout bytes.Buffer
	cmd := newRootCommand()
	cmd.SetArgs([]string{"loader", "run", "--config", conf, "--summary-json", summary, "--log-level", "warn"})
	cmd.SetOut(&stdout)
	cmd.SetErr(io.Discard)
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatalf("loader run: %v\n%s", err, stdout.String())
	}
	if !strings.Contains(stdout.String(), "loader hourly: 100 records, ") {
		t.Errorf("summary line missing: %q", stdout.String())
	}
	var sum struct{ Records, Files, Bytes, Errors int64 }
	raw, err := os.ReadFile(summary)
	if err != nil || json.Unmarshal(raw, &sum) != nil || sum.Records != 100 || sum.Files < 1 || sum.Bytes == 0 {
		t.Errorf("summary json %s: %v %+v", raw, err, sum)
	}
	var files []string
	filepath.WalkDir(filepath.Join(out, "clicks"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if int64(len(files)) != sum.Files {
		t.Errorf("%d data files, summary says %d", len(files), sum.Files)
	}

	props["commit.records"] = "lots"
	conf = testproc.WriteProperties(t, dir, "bad.properties", props)
	cmd = newRootCommand()
	cmd.SetArgs([]string{"loader", "run", "--config", conf})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "commit.records") {
		t.Errorf("bad config: %v, want an error naming commit.records", err)
	}
}
