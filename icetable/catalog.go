package icetable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hive"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver, "sqlite"

	"github.com/tributary/tributary/schema/avro"
)

// Catalog is an open Iceberg catalog with the tables of topics in it. It is
// safe for concurrent use; each Table is used by one goroutine at a time.
type Catalog struct {
	cfg Config
	cat catalog.Catalog
	db  *sql.DB
	// retries counts commit retries of every table of the catalog.
	retries atomic.Int64
}

// Open connects to the catalog c names (c is validated first) and creates
// its namespace if missing.
func Open(ctx context.Context, c Config) (*Catalog, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	props := iceberg.Properties{"warehouse": strings.TrimSuffix(c.Warehouse, "/")}
	maps.Copy(props, c.HDFS.Properties())
	out := &Catalog{cfg: c}
	switch c.Type {
	case CatalogSQL:
		abs, err := filepath.Abs(sqlitePath(c.URI))
		if err != nil {
			return nil, fmt.Errorf("%w: iceberg.catalog.uri=%q: %v", ErrInvalidConfig, c.URI, err)
		}
		// WAL and a busy timeout: other processes (pyiceberg, a second
		// loader) use the same file.
		db, err := sql.Open("sqlite", "file:"+abs+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
		if err != nil {
			return nil, fmt.Errorf("icetable: open sql catalog %s: %w", abs, err)
		}
		props["init_catalog_tables"] = "true"
		cat, err := sqlcat.NewCatalog(c.Name, db, sqlcat.SQLite, props)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("icetable: sql catalog %s: %w", abs, err)
		}
		out.cat, out.db = cat, db
	case CatalogHive:
		props[hive.URI] = c.URI
		cat, err := hive.NewCatalog(props)
		if err != nil {
			return nil, fmt.Errorf("icetable: hive catalog %s: %w", c.URI, err)
		}
		out.cat = cat
	}
	ns := catalog.ToIdentifier(c.Namespace)
	if err := out.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		exists, cerr := out.cat.CheckNamespaceExists(ctx, ns)
		if cerr != nil || !exists {
			out.Close()
			return nil, fmt.Errorf("icetable: create namespace %s: %w", c.Namespace, err)
		}
	}
	return out, nil
}

// Close releases the catalog's connections.
func (c *Catalog) Close() error {
	var err error
	if cl, ok := c.cat.(interface{ Close() error }); ok {
		err = cl.Close()
	}
	if c.db != nil {
		err = errors.Join(err, c.db.Close())
	}
	return err
}

// Retries is the number of commit retries so far, for a counter metric
// (a commit that conflicted with another writer, or whose outcome was
// unknown, and was tried again).
func (c *Catalog) Retries() int64 { return c.retries.Load() }

// Iceberg is the underlying iceberg-go catalog, for readers and tools.
func (c *Catalog) Iceberg() catalog.Catalog { return c.cat }

// Table opens the table of topic, named name in the catalog's namespace,
// creating it from s (partitioned by hours of Config.PartitionField or of
// the Kafka timestamp) if missing, and evolving it to s otherwise: fields s
// adds become columns with new ids; a changed type fails with
// ErrTypeChange and leaves the table alone.
func (c *Catalog) Table(ctx context.Context, topic, name string, s *avro.Schema) (*Table, error) {
	ident := catalog.ToIdentifier(c.cfg.Namespace, name)
	want, err := icebergSchema(s)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	tbl, err := c.cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		tbl, err = c.create(ctx, ident, want)
		if err != nil {
			// A peer created it first.
			if t2, lerr := c.cat.LoadTable(ctx, ident); lerr == nil {
				tbl, err = t2, nil
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("icetable: table %s of topic %s: %w", strings.Join(ident, "."), topic, err)
	}
	t := &Table{cat: c, ident: ident, topic: topic, tbl: tbl, avro: s}
	if err := t.evolve(ctx, want); err != nil {
		return nil, err
	}
	return t, nil
}

func (c *Catalog) create(ctx context.Context, ident table.Identifier, sc *iceberg.Schema) (*table.Table, error) {
	var source iceberg.NestedField
	var ok bool
	col := kafkaColumn + "." + kafkaTimestamp
	if c.cfg.PartitionField != "" {
		col = c.cfg.PartitionField
	}
	source, ok = sc.FindFieldByName(col)
	if !ok {
		return nil, fmt.Errorf("%w: partition field %s is not in the schema", ErrInvalidConfig, col)
	}
	switch source.Type.(type) {
	case iceberg.TimestampTzType, iceberg.TimestampType:
	default:
		return nil, fmt.Errorf("%w: iceberg.tables.default-partition-by: %s is %s, not a timestamp", ErrInvalidConfig, col, source.Type)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{source.ID}, FieldID: 1000, Name: strings.ReplaceAll(col, ".", "_") + "_hour",
		Transform: iceberg.HourTransform{},
	})
	return c.cat.CreateTable(ctx, ident, sc,
		catalog.WithPartitionSpec(&spec),
		catalog.WithProperties(iceberg.Properties{"format-version": "2", "write.parquet.compression-codec": "zstd"}))
}
