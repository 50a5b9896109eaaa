package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/internal/brokertest"
	"github.com/tributary/tributary/internal/testproc"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/schema/registry"
)

// TestLoaderHoursCommand loads two past hours and the current one, and
// lists them with `tributary loader hours` before and after `tributary
// jobs compact --catalog-file`: waiting-for-audit, then compacted and in
// the catalog; the current hour loading throughout.
func TestLoaderHoursCommand(t *testing.T) {
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
	b.CreateTopic(t, "views", 1)
	cl := b.Client(t)
	const sch = `{"type":"record","name":"View","fields":[{"name":"n","type":"long"}]}`
	now := time.Now().UTC()
	past := now.Truncate(time.Hour).Add(-3 * time.Hour)
	for i := range 30 {
		ts := past.Add(time.Duration(i) * 4 * time.Minute) // two past hours, then now
		if i >= 20 {
			ts = now
		}
		v, err := ser.Encode(ctx, "views-value", sch, map[string]any{"n": int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "views", Value: v, Timestamp: ts}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out, dir := t.TempDir(), t.TempDir()
	conf := testproc.WriteProperties(t, dir, "loader.properties", map[string]string{"name": "hourly",
		"bootstrap.servers": b.Addr(), "schema.registry.url": srv.URL, "topics": "views",
		"output.uri": "file://" + out, "audit.enable": "false"})
	run := func(args ...string) string {
		t.Helper()
		var stdout bytes.Buffer
		cmd := newRootCommand()
		cmd.SetArgs(args)
		cmd.SetOut(&stdout)
		cmd.SetErr(io.Discard)
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stdout.String())
		}
		return stdout.String()
	}
	hoursJSON := func() []compact.HourReport {
		t.Helper()
		var rep []compact.HourReport
		if err := json.Unmarshal([]byte(run("loader", "hours", "--config", conf, "--topic", "views", "--json")), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	run("loader", "run", "--config", conf, "--log-level", "warn")
	states := func(rep []compact.HourReport) string {
		var s []string
		for _, r := range rep {
			s = append(s, r.State)
		}
		return strings.Join(s, " ")
	}
	if rep := hoursJSON(); states(rep) != "waiting-for-audit waiting-for-audit loading" || rep[0].Files != 1 || rep[0].Format != "avro" {
		t.Fatalf("before compaction: %s %+v", states(rep), rep)
	}
	catalog := filepath.Join(dir, "catalog.json")
	run("jobs", "compact", "--base", out, "--loader-job", "hourly", "--delay", "1m", "--catalog-file", catalog, "--log-level", "warn")
	rep := hoursJSON()
	if states(rep) != "compacted compacted loading" || rep[1].Format != "parquet" || !strings.HasSuffix(rep[1].Location, ".c1") {
		t.Fatalf("after compaction: %s %+v", states(rep), rep)
	}
	cat, err := compact.ReadFileCatalog(catalog)
	if err != nil || len(cat["views"]) != 2 || cat["views"][1].Location != rep[1].Location {
		t.Fatalf("catalog %+v, %v", cat, err)
	}
	table := run("loader", "hours", "--config", conf, "--topic", "views")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "PARTITION") || !strings.Contains(lines[1], "compacted") ||
		!strings.Contains(lines[1], past.Format("views/2006/01/02/15")) || !strings.Contains(lines[3], "loading") {
		t.Fatalf("table:\n%s", table)
	}
}
