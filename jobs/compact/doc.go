// Package compact turns closed hours of the loader's Avro output into
// Parquet files (github.com/xitongsys/parquet-go) and swaps them in
// atomically for readers that follow the rule of package hours.
//
// # Which hours: readiness
//
// An hour H (a time partition of the topic: package hours) is closed once
// Config.ClosedThrough (the loader's loader.CommittedThrough: the smallest
// over the loader job's partitions of the largest committed record
// timestamp) is at least H's end plus Config.Delay. A closed hour becomes
// ready, and gets its _SUCCESS marker (package hours), when Config.Audit
// (the audit service) reports, for every audit window overlapping H, the
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
// Config.Catalog (a table catalog, e.g. a Hive Metastore) is given, with
// Sync, exactly the partitions package hours says are published: every
// ready hour at its location (the hour directory while Avro, its
// committed generation directory once Parquet), with the topic layout's
// Hive-style partition columns and values and its stored Kafka columns
// (hours.Layout; Partition.Columns, Values, Stored). A run syncs each topic
// first (so the catalog learns the outcome of a crashed run before
// recovery deletes anything it may point at), after marking hours ready,
// and after each swap's commit point, before the replaced files are
// deleted. A failed sync fails the run, and the topic's swaps and the
// deletion of replaced files wait for a run whose sync succeeds; nothing
// is registered twice, since Sync states the whole truth. A catalog
// error wrapping ErrCatalogBlocked (jobs/tables' ErrIncompatible: a schema
// change the table cannot take) also lists the topic in the summary's
// tables_schema_blocked, which the scheduler turns into
// tributary_jobs_tables_schema_blocked; the other topics go on.
//
// # Schema mapping (Avro writer schema -> Parquet)
//
//	boolean, int, long, float, double -> BOOLEAN, INT32, INT64, FLOAT, DOUBLE
//	string, enum                      -> BYTE_ARRAY (UTF8)
//	bytes, fixed                      -> BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY
//	record                            -> group
//	array                             -> LIST (3-level: list/element)
//	map                               -> MAP (key_value: key UTF8, value)
//	["null", T]                       -> T, OPTIONAL
//	[A, B, ...] (with or without null)-> group of OPTIONAL member0, member1, ... (as parquet-avro)
//	timestamp-millis/-micros          -> INT64 TIMESTAMP_MILLIS/_MICROS
//	date, time-millis, time-micros    -> INT32 DATE, INT32 TIME_MILLIS, INT64 TIME_MICROS
//	decimal (bytes or fixed)          -> BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY DECIMAL(precision, scale)
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
// With zstd the pipeline's page views come out at 0.438x the loader's
// deflate Avro (snappy 0.579x), a 30-field request log (size_test.go) at
// 0.521x (snappy 0.683x); before the trials and the zstd level, 0.480x and
// 0.567x.
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
// or one without an order, fails the hour with ErrBadConfig naming the
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
