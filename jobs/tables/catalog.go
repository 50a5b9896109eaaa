package tables

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	hms "github.com/beltran/gohive/hive_metastore"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/hours"
)

// Partition is one time partition of a topic as a table should show it,
// and Catalog what makes a topic's table show exactly the wanted
// partitions (Sync: add missing, alter changed, drop absent; idempotent).
// Both are defined by the contract, package hours, whose SyncCatalog
// publishes what the files say (the hours rule) for compaction and
// retention; a Metastore is an hours.Catalog.
type (
	Partition = hours.Partition
	Catalog   = hours.Catalog
)

// Schemas is what a Metastore needs of the schema registry;
// *serde.RegistryClient is one.
type Schemas interface {
	// Latest returns the id and text of a subject's latest version.
	Latest(ctx context.Context, subject string) (int, string, error)
	// SchemaByID returns the text of the schema with the id.
	SchemaByID(ctx context.Context, id int) (string, error)
}

// PartitionColumn is the table's partition column: the partition's start,
// UTC, "2006-01-02-15" (minutes and seconds appended when the duration is
// not a whole number of hours or minutes).
const PartitionColumn = "hour"

// Hive's class names for the two formats (frozen: they are what readers load).
const (
	avroSerde     = "org.apache.hadoop.hive.serde2.avro.AvroSerDe"
	avroInput     = "org.apache.hadoop.hive.ql.io.avro.AvroContainerInputFormat"
	avroOutput    = "org.apache.hadoop.hive.ql.io.avro.AvroContainerOutputFormat"
	parquetSerde  = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
	parquetInput  = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat"
	parquetOutput = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
	schemaLiteral = "avro.schema.literal"
)

// Metastore is a Catalog in a Hive Metastore, spoken to over its Thrift
// API. Safe for concurrent use; calls are serialised on one connection.
type Metastore struct {
	cfg     Config
	schemas Schemas
	log     *slog.Logger
	metrics *metrics

	mu   sync.Mutex
	conn conn
}

var _ Catalog = (*Metastore)(nil)

// Options are a Metastore's collaborators; zero values mean none.
type Options struct {
	Logger  *slog.Logger
	Metrics prometheus.Registerer
}

// New returns a Metastore registering tables as cfg says (cfg.Enabled is
// not consulted: the caller decides whether to register). No connection
// is made before the first Sync.
func New(cfg Config, schemas Schemas, opts Options) (*Metastore, error) {
	cfg.Enabled = true
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if schemas == nil {
		return nil, fmt.Errorf("%w: no schema registry", ErrInvalidConfig)
	}
	cfg = cfg.withDefaults()
	addrs := make([]string, len(cfg.URIs))
	for i, u := range cfg.URIs {
		addrs[i], _ = metastoreAddr(u)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Metastore{
		cfg: cfg, schemas: schemas, log: log, metrics: newMetrics(opts.Metrics),
		conn: conn{addrs: addrs, dialTimeout: cfg.DialTimeout, callTimeout: cfg.CallTimeout},
	}, nil
}

// Close closes the connection; a later Sync opens another.
func (m *Metastore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.conn.close()
	return nil
}

// PartitionValue returns the value of PartitionColumn for a partition start.
func PartitionValue(start time.Time, d time.Duration) string {
	start = start.UTC()
	switch {
	case d%time.Hour == 0:
		return start.Format("2006-01-02-15")
	case d%time.Minute == 0:
		return start.Format("2006-01-02-15-04")
	}
	return start.Format("2006-01-02-15-04-05")
}

// Sync makes the table of topic hold exactly want: it creates the database
// and the table if missing, adds the columns of a newer compatible schema,
// adds missing partitions, alters those whose location, format or schema
// changed and drops the others (their files are left alone: the tables are
// EXTERNAL). A schema that changes a column's type is refused with
// ErrIncompatible before anything is changed. An error leaves whatever was
// done so far; calling again with the same want finishes it, so nothing is
// registered twice.
func (m *Metastore) Sync(ctx context.Context, topic string, want []Partition) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	began := time.Now()
	err := m.sync(ctx, topic, want)
	m.metrics.observe(topic, began, err)
	if err != nil {
		m.log.Warn("table registration failed", "topic", topic, "err", err)
	}
	return err
}

// plan is a wanted partition as the metastore stores it.
type plan struct {
	values []string
	sd     *hms.StorageDescriptor
	// hiveNames are a Parquet partition's columns as the table's literal
	// names them (hiveLiteral); see indexAccess.
	hiveNames []string
}

// indexAccessKey, set among a table's serde parameters (which Spark's
// Hive client puts into every partition's job), makes Hive's Parquet
// reader match a file's columns to the table's by position, not name.
const indexAccessKey = "parquet.column.index.access"

// indexAccess reports whether the table (of literal columns cols) needs
// and may have indexAccessKey: its literal renamed a union's field
// (hiveLiteral: the Parquet files hold it under the field's own name, so
// by name Hive finds nothing and shows null), and every Parquet
// partition's columns are the first of the table's, in order (else by
// position would read one column as another).
func indexAccess(renamed bool, cols []*hms.FieldSchema, plans []plan) bool {
	if !renamed {
		return false
	}
	for _, p := range plans {
		if p.hiveNames == nil {
			continue
		}
		if len(p.hiveNames) > len(cols) {
			return false
		}
		for i, n := range p.hiveNames {
			if cols[i].Name != n {
				return false
			}
		}
	}
	return true
}

// partitionKeys are the table's partition columns for want: the
// Hive-style layout's (all of want have the same, checkPartitions), else
// PartitionColumn.
func partitionKeys(want []Partition) []string {
	if len(want) > 0 && len(want[0].Columns) > 0 {
		return want[0].Columns
	}
	return []string{PartitionColumn}
}

// partitionValues are p's values of partitionKeys.
func partitionValues(p Partition) []string {
	if len(p.Columns) > 0 {
		return p.Values
	}
	return []string{PartitionValue(p.Start, p.Duration)}
}

func (m *Metastore) sync(ctx context.Context, topic string, want []Partition) error {
	if err := checkPartitions(topic, want, m.cfg.FileSystem != ""); err != nil {
		return err
	}
	db, table := m.cfg.Database, m.cfg.Table(topic)
	_, latest, err := m.schemas.Latest(ctx, topic+"-value")
	if err != nil {
		return fmt.Errorf("tables: topic %s: the latest schema of subject %s-value: %w", topic, topic, err)
	}
	if len(want) > 0 {
		// The files hold the stored Kafka columns after the value's fields.
		if latest, err = want[0].Stored.FileSchema(latest); err != nil {
			return fmt.Errorf("tables: topic %s: the latest schema of subject %s-value: %w", topic, topic, err)
		}
	}
	fileLatest := latest
	if latest, err = hiveLiteral(latest); err != nil {
		return fmt.Errorf("tables: topic %s: %w", topic, err)
	}
	latestCols, err := columns(latest)
	if err != nil {
		return fmt.Errorf("tables: topic %s: %w", topic, err)
	}
	keys := partitionKeys(want)
	for _, c := range latestCols {
		if slices.Contains(keys, c.Name) {
			return fmt.Errorf("%w: topic %s: the value has a field %q, a partition column of the table (path.format)", ErrBadPartition, topic, c.Name)
		}
	}
	plans, err := m.plans(ctx, topic, want)
	if err != nil {
		return err
	}

	// A connection kept from an earlier Sync may have been cut (a metastore
	// restart): the first call finds out, and then one fresh dial is tried.
	reused := m.conn.client != nil
	cl, err := m.conn.get(ctx)
	if err != nil {
		return fmt.Errorf("tables: topic %s: %w", topic, err)
	}
	tres, err := cl.GetTableReq(ctx, &hms.GetTableRequest{DbName: db, TblName: table})
	if err = m.conn.check(err); reused && errors.Is(err, ErrUnavailable) {
		if cl, err = m.conn.get(ctx); err != nil {
			return fmt.Errorf("tables: topic %s: %w", topic, err)
		}
		tres, err = cl.GetTableReq(ctx, &hms.GetTableRequest{DbName: db, TblName: table})
		err = m.conn.check(err)
	}
	var tbl *hms.Table
	switch {
	case err == nil:
		tbl = tres.Table
	case isNoSuchObject(err):
	default:
		return fmt.Errorf("tables: topic %s: get table %s.%s: %w", topic, db, table, err)
	}

	// Every check before the first change: an incompatible schema changes nothing.
	cols := latestCols
	if tbl != nil {
		if cols, err = evolve(topic, tbl.Sd.Cols, latestCols); err != nil {
			return err
		}
		var have []string
		for _, k := range tbl.PartitionKeys {
			have = append(have, k.Name)
		}
		if len(want) > 0 && !slices.Equal(have, keys) {
			return fmt.Errorf("%w: topic %s: table %s.%s is partitioned by (%s), the topic's layout by (%s): a table's partition columns cannot change",
				ErrBadPartition, topic, db, table, strings.Join(have, ", "), strings.Join(keys, ", "))
		}
	}
	for _, p := range plans {
		if _, err := evolve(topic, cols, p.sd.Cols); err != nil {
			return err
		}
	}

	byPosition := indexAccess(latest != fileLatest, latestCols, plans)
	if tbl == nil && len(plans) == 0 && m.cfg.TableLocation == nil {
		return nil // nothing to show yet, and no location for a table
	}
	if tbl == nil {
		if err := m.ensureDatabase(ctx, db); err != nil {
			return fmt.Errorf("tables: topic %s: %w", topic, err)
		}
		tbl = m.newTable(topic, table, cols, latest, plans, keys)
		setIndexAccess(tbl.Sd.SerdeInfo, byPosition)
		if err := m.conn.check(cl.CreateTable(ctx, tbl)); err != nil {
			return fmt.Errorf("tables: topic %s: create table %s.%s: %w", topic, db, table, err)
		}
		m.log.Info("table created", "topic", topic, "table", db+"."+table, "columns", len(cols))
	} else if !sameCols(tbl.Sd.Cols, cols) || tbl.Parameters[schemaLiteral] != latest ||
		(tbl.Sd.SerdeInfo.Parameters[indexAccessKey] == "true") != byPosition {
		tbl.Sd.Cols = cols
		tbl.Parameters[schemaLiteral] = latest
		tbl.Sd.SerdeInfo.Parameters[schemaLiteral] = latest
		setIndexAccess(tbl.Sd.SerdeInfo, byPosition)
		if err := m.conn.check(cl.AlterTable(ctx, db, table, tbl)); err != nil {
			return fmt.Errorf("tables: topic %s: alter table %s.%s: %w", topic, db, table, err)
		}
		m.log.Info("table columns changed", "topic", topic, "table", db+"."+table, "columns", len(cols))
	}

	existing, err := cl.GetPartitions(ctx, db, table, -1)
	if err = m.conn.check(err); err != nil {
		return fmt.Errorf("tables: topic %s: list partitions of %s.%s: %w", topic, db, table, err)
	}
	have := map[string]*hms.Partition{}
	for _, p := range existing {
		have[valuesKey(p.Values)] = p
	}
	var add, alter []*hms.Partition
	for _, p := range plans {
		old, ok := have[valuesKey(p.values)]
		delete(have, valuesKey(p.values))
		switch {
		case !ok:
			add = append(add, &hms.Partition{Values: p.values, DbName: db, TableName: table,
				Sd: p.sd, Parameters: map[string]string{}})
		case !samePartition(old.Sd, p.sd):
			old.Sd = p.sd
			alter = append(alter, old)
		}
	}
	if len(add) > 0 {
		// ifNotExists: a partition another registrar added meanwhile is kept, not doubled.
		_, err := cl.AddPartitionsReq(ctx, &hms.AddPartitionsRequest{DbName: db, TblName: table, Parts: add, IfNotExists: true})
		if err = m.conn.check(err); err != nil {
			return fmt.Errorf("tables: topic %s: add %d partitions to %s.%s: %w", topic, len(add), db, table, err)
		}
	}
	if len(alter) > 0 {
		if err := m.conn.check(cl.AlterPartitions(ctx, db, table, alter)); err != nil {
			return fmt.Errorf("tables: topic %s: alter %d partitions of %s.%s: %w", topic, len(alter), db, table, err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(have)) {
		values := have[k].Values
		_, err := cl.DropPartition(ctx, db, table, values, false)
		if err = m.conn.check(err); err != nil && !isNoSuchObject(err) {
			return fmt.Errorf("tables: topic %s: drop partition %s of %s.%s: %w", topic, strings.Join(values, "/"), db, table, err)
		}
	}
	if len(add)+len(alter)+len(have) > 0 {
		m.log.Info("partitions registered", "topic", topic, "table", db+"."+table,
			"added", len(add), "altered", len(alter), "dropped", len(have))
	}
	return nil
}

func setIndexAccess(serde *hms.SerDeInfo, on bool) {
	if on {
		serde.Parameters[indexAccessKey] = "true"
	} else {
		delete(serde.Parameters, indexAccessKey)
	}
}

// valuesKey identifies a partition by its values.
func valuesKey(values []string) string { return strings.Join(values, "\x00") }

// checkPartitions refuses a want the table cannot show.
func checkPartitions(topic string, want []Partition, barePaths bool) error {
	seen := map[string]bool{}
	for _, p := range want {
		bad := func(why string) error {
			return fmt.Errorf("%w: topic %s, partition %s at %s: %s", ErrBadPartition, topic, p.Start.UTC().Format(time.RFC3339), p.Location, why)
		}
		switch {
		case p.Topic != "" && p.Topic != topic:
			return bad("of topic " + p.Topic)
		case p.Duration <= 0 || p.Duration%time.Second != 0:
			return bad(fmt.Sprintf("duration %v is not a positive number of seconds", p.Duration))
		case p.Duration != want[0].Duration:
			return bad(fmt.Sprintf("duration %v differs from %v: one table has one partition duration", p.Duration, want[0].Duration))
		case p.Start.UnixNano()%int64(p.Duration) != 0:
			return bad(fmt.Sprintf("start is not a multiple of %v", p.Duration))
		case p.Format != "avro" && p.Format != "parquet":
			return bad(fmt.Sprintf("format %q: want avro or parquet", p.Format))
		case !strings.Contains(p.Location, "://") && (!barePaths || !strings.HasPrefix(p.Location, "/")):
			return bad("location is neither a URI (hdfs://namenode:port/... or file:///...) nor, with Config.FileSystem set, an absolute path")
		case p.SchemaID <= 0:
			return bad("no schema id")
		case !slices.Equal(p.Columns, want[0].Columns) || p.Stored != want[0].Stored:
			return bad("partition columns or stored Kafka columns differ from the topic's other partitions")
		case len(p.Values) != len(p.Columns):
			return bad(fmt.Sprintf("%d values for the partition columns %v", len(p.Values), p.Columns))
		}
		v := valuesKey(partitionValues(p))
		if seen[v] {
			return bad("wanted twice")
		}
		seen[v] = true
	}
	return nil
}

// plans turns want into storage descriptors: each partition its own
// columns (of the schema its files were written with), serde and formats,
// and for Avro its own avro.schema.literal, so that a reader decodes each
// partition as written and fills the table's newer columns with null.
func (m *Metastore) plans(ctx context.Context, topic string, want []Partition) ([]plan, error) {
	texts := map[int]string{}
	out := make([]plan, 0, len(want))
	for _, p := range want {
		text, ok := texts[p.SchemaID]
		if !ok {
			var err error
			if text, err = m.schemas.SchemaByID(ctx, p.SchemaID); err != nil {
				return nil, fmt.Errorf("tables: topic %s: schema %d: %w", topic, p.SchemaID, err)
			}
			// The files' schema: the value's and the stored Kafka columns.
			if text, err = p.Stored.FileSchema(text); err != nil {
				return nil, fmt.Errorf("tables: topic %s: schema %d: %w", topic, p.SchemaID, err)
			}
			texts[p.SchemaID] = text
		}
		// A Parquet partition's columns are its files'; an Avro partition
		// is read with the literal Hive can map.
		lit, err := hiveLiteral(text)
		if err != nil {
			return nil, fmt.Errorf("tables: topic %s: schema %d: %w", topic, p.SchemaID, err)
		}
		var hiveNames []string
		if p.Format == "parquet" {
			litCols, err := columns(lit)
			if err != nil {
				return nil, fmt.Errorf("tables: topic %s: schema %d: %w", topic, p.SchemaID, err)
			}
			for _, c := range litCols {
				hiveNames = append(hiveNames, c.Name)
			}
		} else {
			text = lit
		}
		cols, err := columns(text)
		if err != nil {
			return nil, fmt.Errorf("tables: topic %s: schema %d: %w", topic, p.SchemaID, err)
		}
		loc := p.Location
		if !strings.Contains(loc, "://") {
			loc = strings.TrimSuffix(m.cfg.FileSystem, "/") + loc
		}
		out = append(out, plan{values: partitionValues(p), sd: storage(p.Format, strings.TrimSuffix(loc, "/"), cols, text), hiveNames: hiveNames})
	}
	return out, nil
}

func storage(format, location string, cols []*hms.FieldSchema, schema string) *hms.StorageDescriptor {
	sd := &hms.StorageDescriptor{Cols: cols, Location: location, NumBuckets: -1,
		BucketCols: []string{}, SortCols: []*hms.Order{}, Parameters: map[string]string{}}
	if format == "parquet" {
		sd.InputFormat, sd.OutputFormat = parquetInput, parquetOutput
		sd.SerdeInfo = &hms.SerDeInfo{SerializationLib: parquetSerde, Parameters: map[string]string{"serialization.format": "1"}}
		return sd
	}
	sd.InputFormat, sd.OutputFormat = avroInput, avroOutput
	sd.SerdeInfo = &hms.SerDeInfo{SerializationLib: avroSerde,
		Parameters: map[string]string{"serialization.format": "1", schemaLiteral: schema}}
	return sd
}

func (m *Metastore) newTable(topic, table string, cols []*hms.FieldSchema, schema string, plans []plan, keys []string) *hms.Table {
	loc := ""
	if m.cfg.TableLocation != nil {
		loc = m.cfg.TableLocation(topic)
	} else if len(plans) > 0 {
		loc = plans[0].sd.Location
		for _, p := range plans[1:] {
			loc = commonDir(loc, p.sd.Location)
		}
	}
	// The table's own format is Avro: a reader then uses each partition's
	// serde (Spark's convertMetastoreParquet applies to Parquet tables only).
	return &hms.Table{TableName: table, DbName: m.cfg.Database, TableType: "EXTERNAL_TABLE",
		Sd:            storage("avro", loc, cols, schema),
		PartitionKeys: partitionSchema(keys),
		Parameters: map[string]string{"EXTERNAL": "TRUE", schemaLiteral: schema,
			"tributary.topic": topic, "comment": "Kafka topic " + topic + ", registered by Tributary"}}
}

func (m *Metastore) ensureDatabase(ctx context.Context, db string) error {
	cl, err := m.conn.get(ctx)
	if err != nil {
		return err
	}
	_, err = cl.GetDatabase(ctx, db)
	if err = m.conn.check(err); err == nil || !isNoSuchObject(err) {
		return err
	}
	// The Thrift struct always sends a location (an empty one is refused):
	// put the database where the metastore would, <warehouse>/<db>.db, the
	// warehouse being where its default database lives.
	def, err := cl.GetDatabase(ctx, DefaultDatabase)
	if err = m.conn.check(err); err != nil {
		return fmt.Errorf("get database %s (for the warehouse location): %w", DefaultDatabase, err)
	}
	loc := strings.TrimSuffix(def.LocationUri, "/") + "/" + db + ".db"
	err = m.conn.check(cl.CreateDatabase(ctx, &hms.Database{Name: db, LocationUri: loc, Parameters: map[string]string{}}))
	if err != nil {
		var exists *hms.AlreadyExistsException
		if errors.As(err, &exists) {
			return nil
		}
		return fmt.Errorf("create database %s: %w", db, err)
	}
	return nil
}

// evolve returns the columns of a table that had cols and now takes next:
// cols in their order (a column the newer schema lacks stays, read as
// null), then next's new columns. A column whose type differs is
// ErrIncompatible.
func evolve(topic string, cols, next []*hms.FieldSchema) ([]*hms.FieldSchema, error) {
	have := map[string]string{}
	for _, c := range cols {
		have[c.Name] = c.Type
	}
	out := slices.Clone(cols)
	for _, c := range next {
		old, ok := have[c.Name]
		switch {
		case !ok:
			out = append(out, c)
		case old != c.Type:
			return nil, fmt.Errorf("%w: topic %s: field %s changes type from %s to %s; registration of %s stops until the schema is fixed",
				ErrIncompatible, topic, c.Name, old, c.Type, topic)
		}
	}
	return out, nil
}

func sameCols(a, b []*hms.FieldSchema) bool {
	return slices.EqualFunc(a, b, func(x, y *hms.FieldSchema) bool { return x.Name == y.Name && x.Type == y.Type })
}

func samePartition(a, b *hms.StorageDescriptor) bool {
	return a != nil && a.SerdeInfo != nil && sameLocation(a.Location, b.Location) && a.InputFormat == b.InputFormat &&
		a.SerdeInfo.SerializationLib == b.SerdeInfo.SerializationLib &&
		a.SerdeInfo.Parameters[schemaLiteral] == b.SerdeInfo.Parameters[schemaLiteral] && sameCols(a.Cols, b.Cols)
}

// commonDir returns the deepest directory holding both locations (URIs of
// one file system: their scheme and authority are the first's).
func commonDir(a, b string) string {
	i := strings.Index(a, "://")
	prefix, pa := a, ""
	if j := strings.Index(a[i+3:], "/"); i >= 0 && j >= 0 {
		prefix, pa = a[:i+3+j], a[i+3+j:]
	}
	pb := strings.TrimPrefix(b, prefix)
	for pa != "/" && pa != "." && pa != "" && !strings.HasPrefix(pb+"/", pa+"/") {
		pa = path.Dir(pa)
	}
	return prefix + pa
}

// sameLocation compares locations as the metastore keeps them: it stores
// file:///x of an added partition as file:/x.
func sameLocation(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return ua.Scheme == ub.Scheme && ua.Host == ub.Host && path.Clean("/"+ua.Path) == path.Clean("/"+ub.Path)
}

// partitionSchema is the table's partition columns: strings, the
// partition start in UTC as the layout formats it.
func partitionSchema(keys []string) []*hms.FieldSchema {
	out := make([]*hms.FieldSchema, len(keys))
	for i, k := range keys {
		out[i] = &hms.FieldSchema{Name: k, Type: "string", Comment: "partition start, UTC"}
	}
	return out
}
