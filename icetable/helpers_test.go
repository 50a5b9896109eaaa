package icetable

import (
	"cmp"
	"context"
	"math/big"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/icereader"
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

// readerCatalog is cat as icereader's readers open it.
func readerCatalog(cat *Catalog) icereader.Catalog {
	c := cat.cfg
	if c.Type == CatalogHive {
		return icereader.HiveCatalog(c.Name, c.URI, c.Warehouse)
	}
	return icereader.SQLCatalog(c.Name, strings.TrimPrefix(c.URI, "file://"), c.Warehouse)
}

// pyRead reads table name of cat with pyiceberg (icereader.ReadPyIceberg),
// rows sorted by Kafka partition and offset.
func pyRead(t *testing.T, cat *Catalog, name string) []map[string]any {
	t.Helper()
	rows := icereader.ReadPyIceberg(t, readerCatalog(cat), cat.cfg.Namespace+"."+name).Rows
	for i, r := range rows {
		if _, ok := r["_kafka"].(map[string]any); !ok {
			t.Fatalf("row %d has no _kafka struct: %v", i, r)
		}
	}
	slices.SortStableFunc(rows, func(a, b map[string]any) int {
		ka, kb := a["_kafka"].(map[string]any), b["_kafka"].(map[string]any)
		return cmp.Or(cmp.Compare(ka["partition"].(int32), kb["partition"].(int32)),
			cmp.Compare(ka["offset"].(int64), kb["offset"].(int64)))
	})
	return rows
}

// tableFactsScript gives pyiceberg's field ids of a table's top-level
// columns and the number of data files its scan plans.
const tableFactsScript = `
t = catalog.load_table(input)
result = {"ids": {f.name: f.field_id for f in t.schema().fields}, "files": len(list(t.scan().plan_files()))}
`

// pyTableFacts returns pyiceberg's field ids of table name's top-level
// columns and the number of data files of its current snapshot.
func pyTableFacts(t *testing.T, cat *Catalog, name string) (ids map[string]int, files int) {
	t.Helper()
	var out struct {
		IDs   map[string]int `json:"ids"`
		Files int            `json:"files"`
	}
	icereader.PyIcebergScript(t, readerCatalog(cat), tableFactsScript, cat.cfg.Namespace+"."+name, &out)
	return out.IDs, out.Files
}

// diffRows fails t with the differences between the rows pyiceberg read and
// the rows wanted, value by value.
func diffRows(t *testing.T, want, got []map[string]any) {
	t.Helper()
	if d := icereader.DiffRows(want, got); d != "" {
		t.Errorf("pyiceberg rows differ:\n%s", d)
	}
}

func decString(unscaled int64, scale int) icereader.Decimal {
	return icereader.Decimal(new(big.Rat).SetFrac(big.NewInt(unscaled), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).FloatString(scale))
}

// kafkaMeta is the _kafka struct of a record as the readers give it.
func kafkaMeta(p int32, o int64, ts time.Time) map[string]any {
	return map[string]any{"partition": p, "offset": o, "timestamp": icereader.InstantOf(ts)}
}
