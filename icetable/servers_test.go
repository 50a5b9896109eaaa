package icetable

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog"

	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// uniqueName is a fresh lower-case name for databases and directories
// shared with other tests on the same servers.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
}

// newHiveCatalog opens the Hive catalog on the test metastore in a database
// of its own, dropped with its tables at the end.
func newHiveCatalog(t *testing.T, warehouse string) *Catalog {
	t.Helper()
	uri := testenv.HiveMetastore(t)
	ns := uniqueName("icetable")
	cat := newCatalog(t, func(c *Config) {
		c.Type, c.URI, c.Namespace, c.Warehouse = CatalogHive, uri, ns, warehouse
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for id, err := range cat.Iceberg().ListTables(ctx, catalog.ToIdentifier(ns)) {
			if err == nil {
				cat.Iceberg().DropTable(ctx, id)
			}
		}
		cat.Iceberg().DropNamespace(ctx, catalog.ToIdentifier(ns))
	})
	return cat
}

func TestHiveCatalogPyiceberg(t *testing.T) {
	cat := newHiveCatalog(t, "file://"+filepath.Join(t.TempDir(), "warehouse"))
	ctx := context.Background()
	tbl, err := cat.Table(ctx, "events.types", "events_types", mustSchema(t, typesSchema))
	if err != nil {
		t.Fatal(err)
	}
	want := appendTypes(t, tbl, 7, 3)
	diffRows(t, want, pyRead(t, cat, "events_types"))
	// A second process (a restarted loader) resumes from the table.
	again, err := Open(ctx, cat.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	t2, err := again.Table(ctx, "events.types", "events_types", mustSchema(t, typesSchema))
	if err != nil {
		t.Fatal(err)
	}
	c, err := t2.Committed(ctx)
	if err != nil || c.Offsets[0] != 4 || c.Offsets[1] != 3 {
		t.Errorf("committed %+v, %v; want 0:4 1:3", c, err)
	}
}

// scanRows reads the table with iceberg-go's own scan: column a and the
// Kafka offsets, in file order.
func scanCount(t *testing.T, tbl *Table) (rows int64, sumA int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := tbl.tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	scan := tbl.Iceberg().Scan()
	at, err := scan.ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	idx := at.Schema().FieldIndices("a")[0]
	for _, chunk := range at.Column(idx).Data().Chunks() {
		a := chunk.(*array.Int64)
		for i := 0; i < a.Len(); i++ {
			sumA += a.Value(i)
		}
	}
	return at.NumRows(), sumA
}

func hdfsWarehouse(t *testing.T) string {
	addr := testenv.HDFS(t)
	return "hdfs://" + addr + "/tmp/" + uniqueName("icetable")
}

func testHDFSAppend(t *testing.T, cat *Catalog) {
	ctx := context.Background()
	tbl, err := cat.Table(ctx, "h", "h", mustSchema(t, simpleSchema))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tbl.Iceberg().Location(), "hdfs://") {
		t.Fatalf("table location %s, want hdfs://", tbl.Iceberg().Location())
	}
	if err := tbl.Append(ctx, simpleBatch(t, tbl, 0, 0, 50, "a")); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Append(ctx, simpleBatch(t, tbl, 1, 0, 30, "b")); err != nil {
		t.Fatal(err)
	}
	rows, sum := scanCount(t, tbl)
	if rows != 80 || sum != 10*(49*50/2+29*30/2) {
		t.Errorf("scan: %d rows, sum %d; want 80, %d", rows, sum, 10*(49*50/2+29*30/2))
	}
	c, err := tbl.Committed(ctx)
	if err != nil || c.Offsets[0] != 50 || c.Offsets[1] != 30 || c.Origins[0] != "a" || c.Origins[1] != "b" {
		t.Errorf("committed %+v, %v", c, err)
	}
}

func TestHDFSWarehouseSQLCatalog(t *testing.T) {
	wh := hdfsWarehouse(t)
	testHDFSAppend(t, newCatalog(t, func(c *Config) { c.Warehouse = wh }))
}

func TestHDFSWarehouseHiveCatalog(t *testing.T) {
	testHDFSAppend(t, newHiveCatalog(t, hdfsWarehouse(t)))
}

// A Kerberized HDFS warehouse: the Kerberos keys, read from properties as
// the loader reads them, reach the HDFS FileIO through the catalog.
func TestKerberizedHDFSWarehouse(t *testing.T) {
	k := testenv.SecureHDFS(t, "privacy")
	p := properties.New(map[string]string{
		"iceberg.catalog.type":         "sql",
		"iceberg.catalog.uri":          filepath.Join(t.TempDir(), "catalog.db"),
		"iceberg.catalog.warehouse":    "hdfs://" + k.Addr + "/tmp/" + uniqueName("icetable"),
		"hdfs.authentication.kerberos": "true", "connect.hdfs.principal": k.ClientPrincipal,
		"connect.hdfs.keytab": k.ClientKeytab, "krb5.conf": k.Krb5Conf,
		"hdfs.namenode.principal":                 k.NameNodePrincipal,
		"dfs.data.transfer.protection":            k.Protection,
		"dfs.encrypt.data.transfer.cipher.suites": k.CipherSuites,
	})
	c := FromProperties(p)
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	if u := p.Unknown(); len(u) > 0 {
		t.Fatalf("keys not read: %v", u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cat, err := Open(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	testHDFSAppend(t, cat)
}
