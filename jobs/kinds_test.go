package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"

	"github.com/tributary/tributary/hours"
)

// TestCompactAndRetentionKinds runs a compact and a retention job through
// the scheduler (as child processes of the real binary) and checks their
// summaries in the history.
func TestCompactAndRetentionKinds(t *testing.T) {
	zk := newZK(t)
	base := t.TempDir()
	codec, err := goavro.NewCodec(`{"type":"record","name":"R","fields":[{"name":"k","type":"string"},{"name":"n","type":"long"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	hour0 := time.Date(2026, 2, 1, 5, 0, 0, 0, time.UTC)
	for h := 0; h < 2; h++ {
		var buf bytes.Buffer
		w, _ := goavro.NewOCFWriter(goavro.OCFConfig{W: &buf, Codec: codec})
		if err := w.Append([]any{map[string]any{"k": "a", "n": int64(h)}, map[string]any{"k": "b", "n": int64(h + 10)}}); err != nil {
			t.Fatal(err)
		}
		dir := hours.Dir(base, "pv", hour0.Add(time.Duration(h)*time.Hour))
		os.MkdirAll(dir, 0o755)
		writeFile(t, dir, hours.LoaderFile{Topic: "pv", First: int64(h * 2), Last: int64(h*2 + 1), SchemaID: 3, Format: hours.Avro}.Name(), buf.String())
	}
	// The loader job "load" committed past both hours.
	man := fmt.Sprintf(`{"version":1,"job":"load","topic":"pv","partition":0,"seq":1,"first_offset":0,"next_offset":4,"max_timestamp_ms":%d,"watermark_ms":%d,"moves":[]}`,
		hour0.Add(3*time.Hour).UnixMilli(), hour0.Add(3*time.Hour).UnixMilli())
	mdir := filepath.Join(base, "_loader", "load", "pv", "0", "manifests")
	os.MkdirAll(mdir, 0o755)
	writeFile(t, mdir, fmt.Sprintf("%020d.json", 1), man)

	startScheduler(t, zk, "s1", fmt.Sprintf(`
jobs:
  - name: compact-pv
    schedule: %[1]s
    kind: compact
    args: {base: %[2]s, loader_job: load, delay: 1m, codec: zstd, target_file_size: 1MiB}
  - name: expire
    schedule: %[1]s
    kind: retention
    args: {base: %[2]s, max_age: 24h, topics: {other: 1h}}
`, never, base))
	st := NewStore(newSession(t, zk), "", 0)

	r := requestRun(t, st, "compact-pv", time.Minute)
	var cs map[string]any
	if err := json.Unmarshal(r.Summary, &cs); err != nil || r.Status != StatusSucceeded {
		t.Fatalf("compact run %+v (%v)", r, err)
	}
	if cs["hours_compacted"] != 2.0 || cs["records"] != 4.0 || cs["files_in"] != 2.0 {
		t.Errorf("compact summary %s", r.Summary)
	}
	matches, _ := filepath.Glob(filepath.Join(base, "pv", "*", "*", "*", "*", "*.parquet"))
	if len(matches) != 2 {
		t.Errorf("parquet files %v", matches)
	}

	r = requestRun(t, st, "expire", time.Minute)
	var rs map[string]any
	if err := json.Unmarshal(r.Summary, &rs); err != nil || r.Status != StatusSucceeded {
		t.Fatalf("retention run %+v (%v)", r, err)
	}
	if rs["hours_removed"] != 2.0 || !strings.Contains(string(r.Summary), "pv/2026/02/01/05") {
		t.Errorf("retention summary %s", r.Summary)
	}
	if _, err := os.Stat(filepath.Join(base, "pv", "2026")); !os.IsNotExist(err) {
		t.Errorf("expired hours left behind: %v", err)
	}
}

func TestLoaderKindCommandLine(t *testing.T) {
	list, err := ParseConfig([]byte("jobs:\n  - name: l\n    schedule: \"@every 5m\"\n    kind: loader\n    args: {config: /etc/loader.properties}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := taskFor(list[0], "/bin/tributary", "/tmp/s.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tk.argv, " "); got != "/bin/tributary loader run --config /etc/loader.properties --summary-json /tmp/s.json" {
		t.Errorf("loader command line %q", got)
	}
}
