package icetable

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/properties"
)

// Catalog types (iceberg.catalog.type).
const (
	// CatalogSQL is Iceberg's JDBC catalog layout on an embedded SQLite
	// file: no server, no Java (the demo's catalog). pyiceberg's SqlCatalog
	// and Iceberg's JdbcCatalog read it.
	CatalogSQL = "sql"
	// CatalogHive is Iceberg's Hive catalog on a Hive Metastore (plain
	// Thrift): Spark, Trino and pyiceberg find the tables there.
	CatalogHive = "hive"
)

// Defaults.
const (
	// DefaultCatalogName is the catalog's name (iceberg.catalog), the
	// catalog_name column of the SQL catalog.
	DefaultCatalogName = "tributary"
	// DefaultNamespace is the namespace (database) of the tables.
	DefaultNamespace = "default"
	// DefaultCommitRetries bounds the retries of one Append's commit.
	DefaultCommitRetries = 10
)

// Keys are the properties FromProperties reads, Kafka Connect's Iceberg
// sink's names where it has one.
var Keys = []string{
	"iceberg.catalog", "iceberg.catalog.type", "iceberg.catalog.uri",
	"iceberg.catalog.warehouse", "iceberg.namespace",
	"iceberg.tables.default-partition-by", "iceberg.commit.retries",
}

// Config says where a topic's Iceberg tables live. The zero value of each
// field but Type, URI and Warehouse means its default.
type Config struct {
	// Name is the catalog's name (iceberg.catalog), default
	// DefaultCatalogName. Readers of a SQL catalog must use the same name.
	Name string
	// Type is CatalogSQL or CatalogHive (iceberg.catalog.type), default sql.
	Type string
	// URI is the catalog's address (iceberg.catalog.uri): for sql a SQLite
	// database file (a path or file:///path), for hive thrift://host:port.
	URI string
	// Warehouse is the root of new tables' locations
	// (iceberg.catalog.warehouse): file:///path or hdfs://host:port/path.
	Warehouse string
	// Namespace is the tables' namespace (iceberg.namespace), default
	// DefaultNamespace; created if missing.
	Namespace string
	// PartitionField is the timestamp column whose hours partition new
	// tables (iceberg.tables.default-partition-by=hours(<field>)); empty
	// means the Kafka record timestamp (_kafka.timestamp). It must be a
	// top-level timestamp field of the topic's Avro schema.
	PartitionField string
	// CommitRetries bounds the retries of one commit
	// (iceberg.commit.retries), default DefaultCommitRetries.
	CommitRetries int
	// HDFS are the client settings of an hdfs:// warehouse (Kerberos,
	// data transfer protection), read with the HDFS keys of filesys.
	HDFS filesys.HDFSOptions
}

var partitionBy = regexp.MustCompile(`^hours?\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)$`)

// FromProperties reads a Config from p (Keys and filesys.HDFSKeys); refused
// values are in p.Err().
func FromProperties(p *properties.Props) Config {
	c := Config{
		Name:          p.String("iceberg.catalog"),
		Type:          strings.ToLower(p.String("iceberg.catalog.type")),
		URI:           p.String("iceberg.catalog.uri"),
		Warehouse:     p.String("iceberg.catalog.warehouse"),
		Namespace:     p.String("iceberg.namespace"),
		CommitRetries: p.Int("iceberg.commit.retries", 0),
		HDFS:          filesys.HDFSOptionsFromProperties(p),
	}
	if v := p.String("iceberg.tables.default-partition-by"); v != "" {
		m := partitionBy.FindStringSubmatch(v)
		if m == nil {
			p.Reject("iceberg.tables.default-partition-by", fmt.Errorf("want hours(<timestamp field>)"))
		} else if m[1] != kafkaColumn {
			c.PartitionField = m[1]
		}
	}
	return c
}

// Validate checks c and fills in defaults; errors wrap ErrInvalidConfig and
// name the key.
func (c *Config) Validate() error {
	if c.Name == "" {
		c.Name = DefaultCatalogName
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.Type == "" {
		c.Type = CatalogSQL
	}
	if c.CommitRetries == 0 {
		c.CommitRetries = DefaultCommitRetries
	}
	if c.CommitRetries < 0 {
		return fmt.Errorf("%w: iceberg.commit.retries=%d: must be >= 0", ErrInvalidConfig, c.CommitRetries)
	}
	switch c.Type {
	case CatalogSQL:
		if c.URI == "" {
			return fmt.Errorf("%w: iceberg.catalog.uri: a sql catalog needs its SQLite file", ErrInvalidConfig)
		}
		if strings.Contains(c.URI, "://") && !strings.HasPrefix(c.URI, "file://") && !strings.HasPrefix(c.URI, "sqlite:///") {
			return fmt.Errorf("%w: iceberg.catalog.uri=%q: a sql catalog is a SQLite file (a path, file:///path or pyiceberg's sqlite:///path)", ErrInvalidConfig, c.URI)
		}
	case CatalogHive:
		if !strings.HasPrefix(c.URI, "thrift://") {
			return fmt.Errorf("%w: iceberg.catalog.uri=%q: a hive catalog needs thrift://host:port", ErrInvalidConfig, c.URI)
		}
	default:
		return fmt.Errorf("%w: iceberg.catalog.type=%q: want sql or hive", ErrInvalidConfig, c.Type)
	}
	switch {
	case c.Warehouse == "":
		return fmt.Errorf("%w: iceberg.catalog.warehouse: required", ErrInvalidConfig)
	case strings.HasPrefix(c.Warehouse, "hdfs://"):
		if _, _, _, err := filesys.ParseHDFSURI(c.Warehouse); err != nil {
			return fmt.Errorf("%w: iceberg.catalog.warehouse: %w", ErrInvalidConfig, err)
		}
		if err := c.HDFS.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	case strings.HasPrefix(c.Warehouse, "file:///"):
	default:
		return fmt.Errorf("%w: iceberg.catalog.warehouse=%q: want file:///path or hdfs://host:port/path", ErrInvalidConfig, c.Warehouse)
	}
	if c.PartitionField != "" && !partitionBy.MatchString("hours("+c.PartitionField+")") {
		return fmt.Errorf("%w: iceberg.tables.default-partition-by: bad field name %q", ErrInvalidConfig, c.PartitionField)
	}
	return nil
}

// sqlitePath is the SQLite file of a sql catalog's iceberg.catalog.uri: a
// path, file:///path, or sqlite:///path as pyiceberg's SqlCatalog writes it.
func sqlitePath(uri string) string {
	for _, prefix := range []string{"sqlite://", "file://"} {
		if rest, ok := strings.CutPrefix(uri, prefix); ok {
			return rest
		}
	}
	return uri
}
