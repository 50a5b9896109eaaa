package icetable

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/schema/avro"
)

// newCatalog opens a SQL catalog on a temp dir (file:// warehouse) with
// mod applied to its Config.
func newCatalog(t *testing.T, mod func(*Config)) *Catalog {
	t.Helper()
	dir := t.TempDir()
	c := Config{Type: CatalogSQL, URI: filepath.Join(dir, "catalog.db"), Warehouse: "file://" + filepath.Join(dir, "warehouse")}
	if mod != nil {
		mod(&c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cat, err := Open(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}

func mustSchema(t testing.TB, text string) *avro.Schema {
	t.Helper()
	s, err := avro.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// native round-trips v through the schema's codec, so values are in the
// exact form goavro decodes.
func native(t testing.TB, s *avro.Schema, v map[string]any) any {
	t.Helper()
	bin, err := s.Codec().BinaryFromNative(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := s.Codec().NativeFromBinary(bin)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type pyResult struct {
	Rows  []map[string]any `json:"rows"`
	IDs   map[string]int   `json:"ids"`
	Files int              `json:"files"`
}

// pyRead reads table name of cat with pyiceberg, rows sorted by Kafka
// partition and offset.
func pyRead(t *testing.T, cat *Catalog, name string) pyResult {
	t.Helper()
	py := os.Getenv("TRIBUTARY_TEST_PYTHON")
	if py == "" {
		t.Fatal("TRIBUTARY_TEST_PYTHON is not set (source the test servers' env; scripts/install-deps.sh installs pyiceberg)")
	}
	c := cat.cfg
	args, _ := json.Marshal(map[string]string{"type": c.Type, "name": c.Name, "uri": strings.TrimPrefix(c.URI, "file://"),
		"warehouse": c.Warehouse, "table": c.Namespace + "." + name})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/read.py", string(args))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyiceberg: %v\n%s", err, stderr.String())
	}
	var res pyResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("pyiceberg output: %v\n%s", err, out)
	}
	sort.Slice(res.Rows, func(i, j int) bool {
		ki, kj := res.Rows[i]["_kafka"].(map[string]any), res.Rows[j]["_kafka"].(map[string]any)
		if ki["partition"] != kj["partition"] {
			return ki["partition"].(float64) < kj["partition"].(float64)
		}
		return ki["offset"].(float64) < kj["offset"].(float64)
	})
	return res
}

// tsString formats as read.py does.
func tsString(tm time.Time, zoned bool) string {
	s := tm.UTC().Format("2006-01-02T15:04:05.000000")
	if zoned {
		s += "Z"
	}
	return s
}

func decString(unscaled int64, scale int) string {
	return new(big.Rat).SetFrac(big.NewInt(unscaled), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).FloatString(scale)
}

// jsonEqual compares after a JSON round trip of want (numbers as float64).
func jsonEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	b, _ := json.Marshal(want)
	var w any
	json.Unmarshal(b, &w)
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("%s:\n got %s\nwant %s", what, gb, wb)
	}
}

func kafkaMeta(p int32, o int64, ts time.Time) map[string]any {
	return map[string]any{"partition": p, "offset": o, "timestamp": tsString(ts, true)}
}

var _ = fmt.Sprintf
