// Package icereader reads Apache Iceberg tables with someone else's code,
// for tests of the tables Tributary writes: pyiceberg 0.12 (PyArrow's
// reader) and Spark 3.5 with Iceberg 1.10's runtime, both through the
// table's catalog: a SQL catalog on a SQLite file (pyiceberg's SqlCatalog;
// Spark's JdbcCatalog with SQLite's JDBC driver) or the Hive catalog on a
// Hive Metastore.
//
// Namespace makes a namespace of the test's own under the catalog's
// warehouse and drops it at cleanup (the metastore is shared; and a Hive
// catalog's tables would otherwise go to the metastore's warehouse, on
// HDFS). ReadPyIceberg scans a table (at a snapshot, filtered, some columns);
// ReadMetadata gives its snapshots with their summaries and its
// properties; PyIcebergScript runs any pyiceberg code (to write a table of
// another writer). NewSpark starts one Spark session for a test, in which
// Spark.SQL runs any statement, Iceberg's procedures included (CALL
// cat.system.rewrite_data_files(table => 'db.t')); ReadSpark reads one
// table in a session of its own.
//
// Values come back type-faithfully, each as the Go type of the type the
// reader gave its column (values.go): int32 for an int, int64 for a long,
// float32 and float64 with NaN and infinities kept, Decimal (plain
// digits), []byte, Date, Timestamp (microseconds, and whether it is an
// instant, UTC, or a date-time of no zone), structs as maps by field name,
// lists as []any, maps as []MapEntry, nulls as nil. Equal and DiffRows
// compare them (NaN equals NaN; int32(1) is not int64(1)).
//
// The readers run in the TRIBUTARY_TEST_PYTHON virtualenv (.cache/venv),
// with Iceberg's Spark runtime and SQLite's JDBC driver from .cache/iceberg
// (or TRIBUTARY_TEST_ICEBERG_LIB); scripts/install-deps.sh (`make deps`)
// installs them. A test whose reader is missing fails naming `make deps`;
// nothing here skips.
//
// Warehouses: both readers read file:// tables; Spark reads and writes
// hdfs:// too (its Hadoop client), but pyiceberg cannot here (PyArrow's
// HDFS needs libhdfs, which the machine lacks).
//
// Each call of the pyiceberg helpers is one Python process (about 3 s). A
// Spark session is one JVM (12-30 s to start, about 450 MB): start one per
// test and batch its statements; a Spark belongs to its test's goroutine.
// Everything started here ends with its test.
package icereader
