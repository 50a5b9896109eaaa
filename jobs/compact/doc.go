// Package compact turns closed hours of the loader's Avro output into
// Parquet files (github.com/xitongsys/parquet-go) and swaps them in
// atomically for readers that follow the rule of package hours. It only
// compacts (and marks hours ready, which compaction waits for): the
// layout, the readiness states and _SUCCESS, the catalog contract
// (hours.Catalog, Partition, SyncCatalog, FileCatalog) and the readiness
// report (hours.Report) are package hours', under every user.
//
// # Which hours: readiness
//
// An hour H (a time partition of the topic: package hours) is closed once
// Config.ClosedThrough (the loader's loader.CommittedThrough: the smallest
// over the loader job's partitions of the largest committed record
// timestamp) is at least H's end plus Config.Delay. A closed hour becomes
// ready, and gets its _SUCCESS marker (package hours), when Config.Audit
// (an hours.Audit: the audit service) reports, for every audit window overlapping H, the
// loader tier's count >= Config.Threshold (completeness.threshold, default
// 1.0; Gobblin's KafkaAuditCountVerifier uses 0.999) x the producer tier's
// count, with some producer count at all. Otherwise it waits; once
// Config.Timeout (completeness.timeout, default 24h) has passed since H's
// end, it is published ready-incomplete, the shortfall (the sum over the
// windows of producer - loader, where positive) recorded in _SUCCESS and
// the summary, and logged. Without an Audit a closed hour is ready at once
// (basis "unaudited"). Windows longer than the partition count records
// outside it too: keep audit.window.ms at most partition.duration.ms.
//
// Only ready hours are compacted. Avro files that land in a compacted hour
// (records later than the delay) are merged by the next run into a new
// generation (recompaction, below) and counted as late_files. The summary
// keeps what is new apart from what is rewritten: records, files_in,
// bytes_in, files_out and bytes_out count this run's Avro inputs and the
// Parquet written from them; records_rewritten, files_rewritten and
// bytes_rewritten the earlier generation's files copied into the new one.
//
// # Catalog
//
// Config.Catalog (an hours.Catalog: a table catalog, e.g. a Hive
// Metastore) is given, with hours.SyncCatalog, exactly the partitions
// package hours says are published: every ready hour at its location (the
// hour directory while Avro, its committed generation directory once
// Parquet), with the topic layout's Hive-style partition columns and
// values and its stored Kafka columns (hours.Layout; hours.Partition's
// Columns, Values, Stored). A run syncs each topic
// first (so the catalog learns the outcome of a crashed run before
// recovery deletes anything it may point at), after marking hours ready,
// and after each swap's commit point, before the replaced files are
// deleted. A failed sync fails the run, and the topic's swaps and the
// deletion of replaced files wait for a run whose sync succeeds; nothing
// is registered twice, since Sync states the whole truth. A catalog
// error wrapping hours.ErrCatalogBlocked (jobs/tables' ErrIncompatible: a schema
// change the table cannot take) also lists the topic in the summary's
// tables_schema_blocked, which the scheduler turns into
// tributary_jobs_tables_schema_blocked; the other topics go on.
//
// # Schema mapping (Avro writer schema -> Parquet)
//
// Every table here is read value by value by each reader named
// (pipeline/typematrix). Hive is the column type jobs/tables registers
// (Hive's AvroSerDe's for Avro partitions); "Spark" is Spark 3.5.9 and
// 4.1.1 through the metastore with default settings, "native" Spark's own
// Parquet reader (spark.read.parquet).
//
//	Avro                    Parquet (physical, logical)      Hive                 Spark   native Spark    pyarrow            DuckDB
//	boolean                 BOOLEAN                          boolean              boolean boolean         bool               BOOLEAN
//	int                     INT32                            int                  int     int             int32              INTEGER
//	long                    INT64                            bigint               bigint  bigint          int64              BIGINT
//	float, double           FLOAT, DOUBLE                    float, double        same    same            float, double      FLOAT, DOUBLE
//	string, enum, uuid      BYTE_ARRAY STRING                string               string  string          string             VARCHAR
//	bytes                   BYTE_ARRAY                       binary               binary  binary          binary             BLOB
//	fixed(n)                FIXED_LEN_BYTE_ARRAY(n)          binary               binary  binary          fixed_size_binary  BLOB
//	decimal(p,s) bytes      FIXED_LEN_BYTE_ARRAY(fewest      decimal(p,s)         decimal decimal         decimal128(p,s)    DECIMAL(p,s)
//	                        for p) DECIMAL(p,s)
//	decimal(p,s) fixed(n)   FIXED_LEN_BYTE_ARRAY(n) (no      binary               binary  binary          fixed_size_binary  BLOB
//	                        annotation: see below)
//	date                    INT32 DATE                       date                 date    date            date32             DATE
//	time-millis             INT32 (no annotation)            int                  int     int             int32              INTEGER
//	time-micros             INT64 (no annotation)            bigint               bigint  bigint          int64              BIGINT
//	timestamp-millis        INT96                            timestamp            timestamp timestamp     timestamp[ns]      TIMESTAMP
//	 (TimestampType INT64)  INT64 TIMESTAMP(MILLIS, UTC)     (no Hive catalog)    -       timestamp       timestamp[ms, UTC] TIMESTAMP WITH TIME ZONE
//	timestamp-micros        INT64 TIMESTAMP(MICROS, UTC)     bigint (micros)      bigint  timestamp       timestamp[us, UTC] TIMESTAMP WITH TIME ZONE
//	local-timestamp-millis  INT64 TIMESTAMP(MILLIS, local)   bigint (millis)      bigint  timestamp_ntz   timestamp[ms]      TIMESTAMP
//	local-timestamp-micros  INT64 TIMESTAMP(MICROS, local)   bigint (micros)      bigint  timestamp_ntz   timestamp[us]      TIMESTAMP
//	record                  group                            struct<...>          struct  struct          struct             STRUCT
//	array                   LIST (3-level: list/element)     array<...>           array   array           list               LIST
//	map                     MAP (key_value: key, value)      map<string,...>      map     map             map                MAP
//	["null", T]             T, OPTIONAL                      T                    T       T               T                  T
//	[A, B, ...]             group of OPTIONAL member0,       struct<member0:A,    struct  struct          struct             STRUCT
//	 (null or not)          member1, ... (as Spark's Avro    member1:B, ...>
//	                        reader and parquet-avro)         (a top-level field:
//	                                                         <name>_members, null
//	                                                         in Avro partitions;
//	                                                         see jobs/tables)
//
// Why these and not others:
//
//   - Field ids: none (parquet-go would give every column 0, which readers
//     resolving columns by id, Iceberg's or Spark's fieldId.read, take for
//     one column). Avro has no ids to give.
//   - timestamp-millis is INT96, as Hive, Impala and Spark's
//     outputTimestampType=INT96 write it: a table's Parquet partitions are
//     read through Hive's ParquetHiveSerDe (the table's own format is Avro,
//     so Spark does not convert it to its native reader), and Hive's Parquet
//     reader up to 3.1, which Spark 3.5 and 4.1 run as their built-in Hive
//     2.3 client, reads a timestamp column only from INT96: INT64 TIMESTAMP
//     fails every query touching the column (ClassCastException
//     LongWritable -> TimestampWritable), measured on both Spark versions.
//     INT96 has no annotation and is an instant (UTC) to every reader; its
//     cost is size: about 4 bytes a row compressed against 1 for a delta
//     INT64 (the page views 0.752x the Avro, against 0.438x as INT64).
//     Values before 1900 make Spark's native reader ask for
//     spark.sql.parquet.int96RebaseModeInRead (the file names no Spark
//     version, so Spark cannot know its calendar is proleptic).
//   - Config.TimestampType INT64 (the CLI's --parquet-timestamp-type
//     INT64, a compact job's parquet_timestamp_type) writes timestamp-millis
//     as the spec prefers instead: INT64 TIMESTAMP(MILLIS,
//     isAdjustedToUTC=true) (converted type TIMESTAMP_MILLIS too),
//     delta-encoded, about a quarter of INT96's bytes (the page views
//     0.461x the Avro). For files read only by native readers (pyarrow,
//     DuckDB, spark.read.parquet, Trino): the CLI refuses it with a Hive
//     catalog (--tables-config with hive.integration=true, such as the file
//     the pipeline's --hive-metastore writes), whose Spark queries would
//     fail as above; the pipeline's own compaction always writes INT96. Every value a long holds (year 1 to 9999 and beyond) is
//     kept; pyarrow reads timestamp[ms, tz=UTC], package hours/rows
//     the same instants as from INT96. The type applies to the files a run
//     writes: files written before a change keep theirs, and a
//     recompacted hour copies its earlier generation's files as they are,
//     so such an hour can hold both types until it is compacted afresh (a
//     reader unifying one schema over the hour, as pyarrow's dataset does,
//     may then refuse it).
//   - timestamp-micros and the local timestamps are INT64 TIMESTAMP (micros
//     UTC-adjusted: an instant; local-*: not), read correctly by every
//     native reader. Hive's AvroSerDe 2.3 knows only timestamp-millis, so
//     their Avro partitions read as bigint; the table column is bigint too
//     (Hive's Parquet reader reads these INT64 as bigint), the same number
//     on both formats.
//   - Decimals are FIXED_LEN_BYTE_ARRAY: Hive's Parquet reader up to 3.1
//     reads no INT32/INT64 decimals and Spark's vectorized reader no
//     BYTE_ARRAY ones (parquet-mr's legacy format, which Spark writes for
//     Hive with writeLegacyFormat, makes the same choice).
//   - A decimal of an Avro fixed is FIXED_LEN_BYTE_ARRAY without the
//     DECIMAL annotation (the unscaled two's-complement bytes): Hive 2.3's
//     AvroSerDe reads such a decimal as binary, so the table's column is
//     binary, and Hive's Parquet reader fails a query on a DECIMAL in a
//     binary column (HiveDecimalWritable cannot be cast to BytesWritable).
//     Use bytes for decimals that should be decimals everywhere.
//   - time-millis and time-micros carry no TIME annotation: Spark's native
//     reader (3.5 and 4.1) refuses a whole file with a TIME column. The
//     value is the millisecond (or microsecond) of the day; the Avro type
//     is in the file's footer metadata under parquet.avro.schema (the
//     writer schema, as parquet-avro stores it), which package
//     hours/rows reads to give them back as durations.
//   - enum and uuid are strings: pyarrow reads an ENUM annotation as
//     binary and Parquet's UUID (FIXED[16]) is read by neither Hive nor
//     Spark.
//   - Statistics leave NaN out of float bounds (a NaN bound would make a
//     reader skip pages that match a filter) and give zero bounds as -0
//     (min) and +0 (max); INT96 columns have none (no defined order).
//
// Recursive records are not supported (Parquet has no recursion); such an
// hour fails with ErrUnsupportedSchema and stays Avro. An empty array or
// map is written as an empty list or map.
//
// # Schema versions within an hour
//
// Files are grouped by their writer schema (read from each Avro file's
// header) and each group becomes its own Parquet file(s), named
// <topic>+s<schemaID>+<nnn>.parquet (hours.CompactedFile): no schema resolution is attempted, so
// every row keeps exactly the fields its producer wrote. Within a group
// rows keep the order of the input files sorted by partition and first
// offset, unless the topic has a sort key (below).
//
// # File size and codec
//
// A Parquet file is closed when the bytes written plus parquet-go's
// estimate of the rows it buffers (uncompressed) reach TargetFileSize, so
// files come out at or below the target; row groups are at most
// min(TargetFileSize, 64 MiB). Codec zstd (default) or snappy.
//
// # Encodings
//
// Every data page is written by pages.go (parquet-go writes the
// dictionary pages, footer and indexes), compressed with zstd at
// klauspost's SpeedBetterCompression (about zstd level 7: parquet-go's
// SpeedDefault stores pages of few repeats, such as hex ids, nearly raw)
// or snappy. Each column's encoding is chosen by trial on its first batch
// in a file (4,096 rows, when it holds at least 1,000 values): encoded and
// compressed both ways, the smaller wins for the rest of the file.
//
//	string, enum                     dictionary or DELTA_LENGTH_BYTE_ARRAY
//	int, long and their logical types dictionary or DELTA_BINARY_PACKED
//	timestamp-millis (INT96)         dictionary or PLAIN
//	timestamp-millis (INT64)         dictionary or DELTA_BINARY_PACKED
//	float, double                    dictionary or PLAIN
//	boolean, bytes, fixed, decimal   PLAIN
//
// A smaller first batch keeps the default: a dictionary for strings, the
// second of the pair for numbers. A page of nulls only is PLAIN, which
// needs no bytes for no values (parquet-go's delta encoders write not even
// their header, and pyarrow rejects the file). Dictionaries
// (RLE_DICTIONARY, one per column and row group) carry their indices in
// the RLE/bit-packed hybrid at the narrowest width (parquet-go's own
// writer spends 32 bits on each); a column of mostly distinct values (ids,
// timestamps, latencies, sequence numbers) comes out smaller without one,
// as parquet-mr falls back from an oversized dictionary. pyarrow reads
// all of these (the size and crash tests read every row back with it), so
// do package rows (TestRowsReadWideCompacted) and Spark 3.5 (DELTA_LENGTH_BYTE_ARRAY in its vectorized reader since
// 3.3). BYTE_STREAM_SPLIT is not used: parquet-mr before 1.12 (Hive 3.1)
// cannot read it, and it lost to PLAIN on the decimal-fraction doubles
// below (212,779 bytes against 114,840 for a latency column).
//
// With zstd the pipeline's page views come out at 0.752x the loader's
// deflate Avro (snappy 1.177x), a 30-field request log (size_test.go) at
// 0.560x (snappy 0.760x): their timestamp-millis is INT96 (above); with
// TimestampType INT64 they are 0.461x and 0.525x (0.438x and 0.521x
// were measured before INT96 and the parquet.avro.schema footer came in).
//
// # Sort order
//
// Without a sort key rows keep the input order above. Config.SortBy (the
// CLI's --sort-by TOPIC=COL[,COL...], a compact job's sort_by) gives a
// topic one: top-level fields of its value record, each of a type with
// an order (a primitive, enum, fixed or logical type, or one of them or
// null; not a record, array, map or union of several types). The rows of
// each of its Parquet files are then ordered by the key: nulls first,
// values as Parquet's logical types order them (numbers signed, strings
// and bytes bytewise, decimals by value, false before true), ties in the
// input order (partition, then offset). A column an hour's schema lacks,
// or one without an order, fails the hour with ErrInvalidConfig naming the
// topic and the column (Run's error wraps it); the hour stays Avro.
//
// Memory stays bounded: rows are sorted in a buffer of
// Config.SortBufferBytes (default 256 MiB), estimated as decoded (a row
// of the request log holds about 3.7 KB as goavro decodes it, so some
// 70,000 rows). The rows of a schema group of an hour that fit are sorted
// whole, and each file is in key order; a bigger group is written as
// sorted runs of about that size (a file then in key order within each
// run), counted in Summary.SortedRuns. Shorter runs gain less: the
// request log below sorted by user_id in runs of 64, 32 and 8 MiB (some
// 15,000, 9,000 and 2,300 rows of its 30,000 an hour) comes out at
// 0.504x, 0.511x and 0.529x, against 0.498x sorted whole and 0.521x
// unsorted.
//
// Sorting costs CPU: the wide sample's two hours took 1.54 CPU-seconds
// sorted against 0.93 unsorted (BenchmarkCompactWide), mostly in
// shredding rows that are no longer in the order they were decoded into
// memory and in the collector scanning the buffered hour; the sort
// itself is 3%.
//
// A key is a property of the data, not of the schema, so it is the
// operator's choice: it pays when other columns follow it. The request
// log sorted by user_id comes out at 0.498x (4.4% smaller than unsorted),
// since its session, account and shard columns follow the user; sorted by
// a low-cardinality column (service, host, or method and status) it was
// 7-10% larger: those columns are independent of each other, and sorting
// scatters the timestamps' deltas. The page views sorted by user come out
// at 0.515x against 0.438x unsorted: the user decides no other column.
//
// # Swap protocol and recovery
//
// For each hour, every step below is one file-system operation and a
// crash point (EnvCrashAt makes the process SIGKILL itself at step N, for
// the tests); generation G is 1, or the committed one + 1:
//
//  1. readiness: write <hour>/_SUCCESS.tmp and rename it to _SUCCESS, then
//     sync the catalog;
//  2. copy generation G-1's outputs (if any) into <hour>.c<G>/, then write
//     each new Parquet file there (readers ignore an uncommitted
//     generation), then copy _SUCCESS there;
//  3. write <hour>/_compacted.tmp (the manifest, format version 2:
//     generation G, every input so far and every output) and rename it to
//     <hour>/_compacted: the commit point;
//  4. sync the catalog (the partition now at <hour>.c<G>, Parquet);
//  5. delete the new Avro inputs, then generation G-1 (or, for an hour of
//     the old layout, the Parquet files beside its Avro).
//
// EnvPauseAt ("STEP:FILE") holds a run after each step of that name until
// FILE exists, so that a test can query a table in the middle of a swap;
// the steps are logged at debug level with their names.
//
// Every run first recovers every hour: it removes _compacted.tmp and
// _SUCCESS.tmp and every generation newer than the committed one (never
// published); with a marker, once the catalog was synced, it finishes
// step 5 (deleting the inputs the manifest names, older generations and
// the old layout's outputs). Without a marker it removes every generation
// and compaction output, undoing steps 2-3 so that the hour is compacted
// afresh.
//
// # Concurrency
//
// One Compactor run at a time per base: the scheduler's job lock ensures
// it for one job; do not configure two compact jobs over the same base.
package compact
