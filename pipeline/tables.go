package pipeline

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/jobs/tables"
)

// TablesFile is the tables configuration the pipeline writes into Dir with
// Config.HiveMetastoreURIs: kafka-connect-hdfs's keys, as `tributary jobs
// compact --tables-config` and `jobs retention --tables-config` take them.
// The compaction part registers through what it says.
const TablesFile = "tables.properties"

// tablesProps are the keys of the TablesFile of c.
func (c Config) tablesProps(registryURL string) map[string]string {
	props := map[string]string{
		"hive.integration":    "true",
		"hive.metastore.uris": strings.Join(c.HiveMetastoreURIs, ","),
		"hive.database":       c.HiveDatabase,
		"schema.registry.url": registryURL,
	}
	if c.HiveDatabase == "" {
		delete(props, "hive.database")
	}
	return props
}

// validateTables checks the metastore keys without reaching the metastore.
func (c Config) validateTables() error {
	if len(c.HiveMetastoreURIs) == 0 {
		return nil
	}
	if c.CompactInterval <= 0 {
		return fmt.Errorf("%w: %w: tables are registered by the compaction part, which needs a compact interval", ErrInvalidConfig, ErrTables)
	}
	if _, err := tables.ConfigFromProperties(properties.New(c.tablesProps("http://registry"))); err != nil {
		return fmt.Errorf("%w: %w: %w", ErrInvalidConfig, ErrTables, err)
	}
	return nil
}

// openTables writes <Dir>/TablesFile and opens the metastore it names,
// reaching it once so that a wrong address fails the start, not the first
// compaction an hour later.
func (p *Pipeline) openTables(ctx context.Context) error {
	if len(p.cfg.HiveMetastoreURIs) == 0 {
		return nil
	}
	props := p.cfg.tablesProps(p.RegistryURL())
	if p.secure != nil {
		// The compaction part reads the topic's schema as the loader does.
		maps.Copy(props, p.secure.registryProps("loader"))
	}
	file := filepath.Join(p.dir, TablesFile)
	if err := writeProperties(file, "the tables configuration (tributary jobs compact --tables-config)", props); err != nil {
		return err
	}
	m, cfg, err := tables.Open(properties.New(props), p.cfg.OutputURI(), tables.Options{Logger: p.logger.With("part", "compact")})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTables, err)
	}
	if _, err := m.Registered(ctx, p.cfg.Topic); err != nil {
		_ = m.Close()
		return fmt.Errorf("%w: cannot reach it: %w", ErrTables, err)
	}
	p.tables, p.tablesCfg = m, cfg
	return nil
}

// Table returns the database-qualified name of the page-view topic's
// table ("" without Config.HiveMetastoreURIs).
func (p *Pipeline) Table() string {
	if p.tables == nil {
		return ""
	}
	return p.tablesCfg.Database + "." + p.tablesCfg.Table(p.cfg.Topic)
}

// Tables returns the metastore the compaction part registers in, nil
// without Config.HiveMetastoreURIs.
func (p *Pipeline) Tables() *tables.Metastore { return p.tables }

// SparkSQL returns a spark-sql command line that runs query against the
// pipeline's metastore with Spark's built-in Hive client.
func (p *Pipeline) SparkSQL(query string) string {
	return fmt.Sprintf("spark-sql --conf spark.sql.catalogImplementation=hive --conf spark.hadoop.hive.metastore.uris=%s -e %q",
		strings.Join(p.cfg.HiveMetastoreURIs, ","), query)
}

// printRegistered is the demo's last lines with a metastore: what the
// table holds and how to query it.
func (p *Pipeline) printRegistered(w io.Writer) {
	if p.tables == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	parts, err := p.tables.Registered(ctx, p.cfg.Topic)
	if err != nil {
		fmt.Fprintf(w, "tables: %s: %v\n", p.Table(), err)
		return
	}
	formats := map[string]int{}
	for _, rp := range parts {
		formats[rp.Format]++
	}
	fmt.Fprintf(w, "tables: %s holds %d partitions (%d Parquet, %d Avro); query it with\n  %s\n", p.Table(), len(parts),
		formats["parquet"], formats["avro"], p.SparkSQL(fmt.Sprintf("SELECT * FROM %s LIMIT 10", p.Table())))
}

// printTables is the banner's tables lines.
func (p *Pipeline) printTables(w io.Writer) {
	if p.tables == nil {
		return
	}
	table := p.Table()
	fmt.Fprintf(w, "  tables             %s in %s: partition column %s, each partition registered once ready (audit-proved), Avro, then Parquet once compacted; config %s\n",
		table, strings.Join(p.cfg.HiveMetastoreURIs, ","), tables.PartitionColumn, filepath.Join(p.dir, TablesFile))
	fmt.Fprintf(w, "    query            %s\n", p.SparkSQL(fmt.Sprintf("SELECT %s, count(*) FROM %s GROUP BY %s ORDER BY %s",
		tables.PartitionColumn, table, tables.PartitionColumn, tables.PartitionColumn)))
}
