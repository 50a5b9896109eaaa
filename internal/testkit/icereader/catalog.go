package icereader

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// CatalogKind says which Iceberg catalog a Catalog is.
type CatalogKind string

const (
	// SQL is Iceberg's SQL (JDBC) catalog on a SQLite file: pyiceberg's
	// SqlCatalog, Java's JdbcCatalog.
	SQL CatalogKind = "sql"
	// Hive is Iceberg's Hive catalog on a Hive Metastore.
	Hive CatalogKind = "hive"
)

// Catalog is an Iceberg catalog the readers load tables through.
type Catalog struct {
	// Name is the catalog's name: a SQL catalog's rows carry it (it must
	// be the writer's), and Spark SQL names tables Name.namespace.table
	// (it must be a plain identifier).
	Name string
	Kind CatalogKind
	// URI is a Hive catalog's metastore, thrift://host:port.
	URI string
	// Path is a SQL catalog's SQLite file.
	Path string
	// Warehouse is where new tables go, a URI: file:///dir or
	// hdfs://host:port/dir.
	Warehouse string
}

// SQLCatalog returns the SQL catalog name on the SQLite file path.
func SQLCatalog(name, path, warehouse string) Catalog {
	return Catalog{Name: name, Kind: SQL, Path: path, Warehouse: warehouse}
}

// HiveCatalog returns the Hive catalog name on the metastore at uri
// (thrift://host:port).
func HiveCatalog(name, uri, warehouse string) Catalog {
	return Catalog{Name: name, Kind: Hive, URI: uri, Warehouse: warehouse}
}

// pyConfig is the catalog as the scripts read it.
func (c Catalog) pyConfig() map[string]any {
	return map[string]any{"type": string(c.Kind), "name": c.Name, "uri": c.URI, "path": c.Path, "warehouse": c.Warehouse}
}

// sparkSettings are the Spark settings that make c a catalog of the session.
func (c Catalog) sparkSettings() map[string]string {
	p := "spark.sql.catalog." + c.Name
	s := map[string]string{
		p:                "org.apache.iceberg.spark.SparkCatalog",
		p + ".warehouse": c.Warehouse,
		// Every query sees the latest commit, also one made by another
		// writer since the last query.
		p + ".cache-enabled": "false",
	}
	switch c.Kind {
	case Hive:
		s[p+".type"] = "hive"
		s[p+".uri"] = c.URI
	case SQL:
		s[p+".catalog-impl"] = "org.apache.iceberg.jdbc.JdbcCatalog"
		s[p+".uri"] = "jdbc:sqlite:" + c.Path
	}
	return s
}

// EnvIcebergLib overrides the directory holding the Iceberg readers' jars
// (default: .cache/iceberg in the repository, where scripts/install-deps.sh
// puts them).
const EnvIcebergLib = "TRIBUTARY_TEST_ICEBERG_LIB"

// The jars, as scripts/install-deps.sh names them.
const (
	icebergLib        = ".cache/iceberg"
	icebergRuntimeJar = "iceberg-spark-runtime-3.5_2.12-1.10.0.jar"
	sqliteJDBCJar     = "sqlite-jdbc-3.50.3.0.jar"
)

// sparkJars returns the paths of Iceberg's Spark runtime and SQLite's JDBC
// driver, or fails t naming `make deps`.
func sparkJars(t testing.TB) []string {
	t.Helper()
	lib := os.Getenv(EnvIcebergLib)
	if lib == "" {
		lib = filepath.Join(testenv.RepoRoot(t), icebergLib)
	}
	var jars []string
	for _, jar := range []string{icebergRuntimeJar, sqliteJDBCJar} {
		path := filepath.Join(lib, jar)
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("Iceberg's Spark jars are not installed (%v): run `make deps` "+
				"(scripts/install-deps.sh fetches them into %s), or set %s", err, icebergLib, EnvIcebergLib)
		}
		jars = append(jars, path)
	}
	return jars
}

// python returns the readers' Python interpreter after checking that it
// imports modules, or fails t naming `make deps`.
func python(t testing.TB, modules string) string {
	t.Helper()
	py := testenv.Python(t)
	key := py + "\x00" + modules
	if _, ok := imported.Load(key); ok {
		return py
	}
	if out, err := exec.Command(py, "-c", "import "+modules).CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import %s: run `make deps` (scripts/install-deps.sh installs "+
			"pyiceberg and pyspark into .cache/venv): %v\n%s", py, modules, err, out)
	}
	imported.Store(key, true)
	return py
}

// imported remembers the interpreters and modules python found, so that
// each is checked once per test binary.
var imported sync.Map
