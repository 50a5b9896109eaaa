package loader_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/loader"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func baseConfig(c *cluster, job, topics, uri string) loader.Config {
	return loader.Config{Name: job, Brokers: []string{c.Addr()}, RegistryURL: c.registry, Topics: topics,
		OutputURI: uri, AuditCluster: "test"}
}

func hourStart() time.Time { return time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC) }

// TestLoadExactlyOnce loads records of two schema versions over 6
// partitions and 3 hours into each file system and reads them back with
// fastavro: every record exactly once, with its content, in the file of
// its partition, hour and schema. A second run loads only what was
// produced since, and the audit events sum to the records once.
func TestLoadExactlyOnce(t *testing.T) {
	n := 60_000
	if os.Getenv("TRIBUTARY_FULL") == "1" {
		n = 1_000_000
	}
	c := newCluster(t)
	d := dataset{topic: "page-views", n: n, partitions: 6, start: hourStart(), span: 3 * time.Hour}
	c.CreateTopic(t, d.topic, d.partitions)
	c.produceDataset(t, d)
	for _, fc := range slices.Concat(fileSystems, kerberizedFileSystems) {
		t.Run(fc.name, func(t *testing.T) {
			fsys, base, uri := fc.open(t)
			cfg := fc.config(t, c, "hourly-"+fc.name, "page-.*", uri)
			cfg.Codec = "deflate" // fastavro reads snappy only with python-cramjam
			cfg.CommitRecords = int64(n / 12)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			l, err := loader.New(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			sum, err := l.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %+v (%.0f records/s)", fc.name, sum, float64(sum.Records)/sum.Seconds)
			if sum.Records != int64(n) || sum.Errors != 0 || sum.Partitions != 6 {
				t.Fatalf("summary %+v, want %d records over 6 partitions", sum, n)
			}
			checkWithFastavro(t, d, fsys, base)
			// Every file name carries its offset range; nothing else is there.
			for _, f := range dataFiles(t, fsys, base) {
				if !strings.HasPrefix(f, "page-views/2026/03/14/") {
					t.Errorf("unexpected data file %s", f)
				}
			}
			through, err := loader.CommittedThrough(ctx, fsys, base, cfg.Name)
			if err != nil || through.Before(d.ts(n-6)) {
				t.Errorf("CommittedThrough = %v, %v; want at least the last record's time %v", through, err, d.ts(n-6))
			}
			// Nothing new: a second run commits nothing and writes no file.
			sum, err = l.Run(ctx)
			if err != nil || sum.Records != 0 || sum.Files != 0 {
				t.Fatalf("second run: %+v %v", sum, err)
			}
			checkAudit(t, c, cfg.Name, map[string]int64{d.topic: int64(n)})
		})
	}
}

// checkWithFastavro copies the data files to a local directory and reads
// them with Python's fastavro, an Avro implementation independent of ours.
func checkWithFastavro(t *testing.T, d dataset, fsys filesys.FS, base string) {
	t.Helper()
	rows, files := readWithFastavro(t, fsys, base)
	got := map[int64][]landed{}
	for _, row := range rows {
		got[row.rec["id"].(int64)] = append(got[row.rec["id"].(int64)], landed{file: row.file, rec: row.rec})
	}
	t.Logf("fastavro read %d records from %d files", len(rows), files)
	checkExactlyOnce(t, d, got)
}

// fastavroRow is one record fastavro read: bytes values are {"hex": ...}
// maps, "id" an int64, other numbers json.Number.
type fastavroRow struct {
	file, codec string
	rec         map[string]any
}

// readWithFastavro reads every data file under base with fastavro.
func readWithFastavro(t *testing.T, fsys filesys.FS, base string) ([]fastavroRow, int) {
	t.Helper()
	py := testenv.Python(t)
	dir := t.TempDir()
	var files []string
	for i, f := range dataFiles(t, fsys, base) {
		b, err := filesys.ReadFile(fsys, path.Join(base, f))
		if err != nil {
			t.Fatal(err)
		}
		local := filepath.Join(dir, strings.ReplaceAll(f, "/", "_")+".f"+string(rune('0'+i%10)))
		if err := os.WriteFile(local, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f+"\t"+local)
	}
	script := `
import sys, json, fastavro
out = []
for arg in sys.argv[1:]:
    name, local = arg.split("\t", 1)
    with open(local, "rb") as fo:
        r = fastavro.reader(fo)
        codec = r.metadata.get("avro.codec")
        for rec in r:
            out.append([name, codec, rec])
json.dump(out, sys.stdout, default=lambda b: {"hex": b.hex()})
`
	cmd := exec.Command(py, append([]string{"-c", script}, files...)...)
	outb, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("fastavro: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var raw [][3]json.RawMessage
	if err := json.Unmarshal(outb, &raw); err != nil {
		t.Fatal(err)
	}
	rows := make([]fastavroRow, len(raw))
	for i, row := range raw {
		json.Unmarshal(row[0], &rows[i].file)
		json.Unmarshal(row[1], &rows[i].codec)
		dec := json.NewDecoder(strings.NewReader(string(row[2])))
		dec.UseNumber()
		if err := dec.Decode(&rows[i].rec); err != nil {
			t.Fatal(err)
		}
		id, _ := rows[i].rec["id"].(json.Number).Int64()
		rows[i].rec["id"] = id
	}
	return rows, len(files)
}

// checkAudit reads the audit topic and checks that the loader's events of
// job, deduplicated by ID as the audit service does, sum to want per topic.
func checkAudit(t *testing.T, c *cluster, job string, want map[string]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	end, err := c.adm.ListEndOffsets(ctx, audit.DefaultTopic)
	if err != nil {
		t.Fatal(err)
	}
	offsets := map[int32]kgo.Offset{}
	remaining := map[int32]int64{}
	end.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			offsets[o.Partition] = kgo.NewOffset().AtStart()
			remaining[o.Partition] = o.Offset
		}
	})
	cl := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{audit.DefaultTopic: offsets}))
	seen := map[string]bool{}
	got := map[string]int64{}
	sent := 0
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading the audit topic: %v", ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= remaining[r.Partition] {
				delete(remaining, r.Partition)
			}
			e, err := audit.UnmarshalEvent(r.Value)
			if err != nil || e.Instance != job || e.Tier != audit.TierLoader {
				return
			}
			sent++
			if seen[e.ID] {
				return
			}
			seen[e.ID] = true
			got[e.Topic] += e.Count
		})
	}
	for topic, n := range want {
		if got[topic] != n {
			t.Errorf("audit: %s counted %d (deduplicated by id; %d events sent), want %d", topic, got[topic], sent, n)
		}
	}
}
