// Package icetable is a topic's Apache Iceberg table: the loader's second
// output format (issue 42), built on github.com/apache/iceberg-go.
//
// # Catalogs and storage
//
// Config holds Kafka Connect's Iceberg sink's keys: iceberg.catalog.type is
// sql (Iceberg's JDBC catalog layout in an embedded SQLite file through the
// pure-Go modernc.org/sqlite driver: no server, no Java, the demo's choice;
// pyiceberg's SqlCatalog and Iceberg's JdbcCatalog read it, under the same
// catalog name) or hive (Iceberg's Hive catalog on a Hive Metastore, plain
// Thrift, where Spark, Trino and pyiceberg find the tables);
// iceberg.catalog.uri, iceberg.catalog.warehouse (file:///... or
// hdfs://...), iceberg.namespace, iceberg.tables.default-partition-by
// (hours(<field>)) and iceberg.commit.retries. iceberg-go has no HDFS
// FileIO: importing this package registers one for the hdfs scheme over
// internal/filesys, so Kerberized HDFS works with the loader's keys
// (filesys.HDFSKeys), which travel in the catalog properties.
//
// # Schema
//
// A table's schema comes from the topic's Avro record schema: boolean, int,
// long, float, double as themselves; string, enum and uuid as string; bytes
// as binary, fixed(n) as fixed[n]; decimal(p,s) on bytes or fixed as
// decimal(p,s) (p <= 38); date as date; time-millis and time-micros as time
// (µs); timestamp-millis and -micros as timestamptz (µs, INT64 in Parquet, as
// the Iceberg spec writes it); local-timestamp-* as timestamp; records as
// structs, arrays as lists, maps as map<string, V>; ["null", T] as T; a
// union of several types as a struct of optional members member0, member1,
// ... (as docs/tables.md maps them for Hive). Every column from Avro is
// optional, so that a later version may drop or widen a field. Then the
// metadata column _kafka struct<partition int, offset long, timestamp
// timestamptz> (required, frozen) identifies each record. New tables are
// partitioned by hours(_kafka.timestamp), or of the configured top-level
// timestamp field.
//
// Field ids are given once, when the table is created. A later schema
// version is merged by name (iceberg-go's union by name): an added field
// becomes a column with a new id, which older data files lack and readers
// return as null; a dropped field stays a column, null in new rows. A
// type change other than Iceberg's promotions (int to long, float to
// double, a wider decimal) fails with ErrTypeChange naming topic, field
// and both types, and leaves the table unchanged.
//
// # Snapshot summary (frozen)
//
// Each Append writes Parquet data files (field ids in the Parquet schema,
// through iceberg-go and arrow-go) and commits them in ONE append snapshot
// whose summary holds, besides Iceberg's own keys:
//
//	tributary.offsets.<partition>  next Kafka offset of that partition, decimal
//	tributary.origin.<partition>   the loader's origin high-water marks of that
//	                               partition (mirror de-duplication), opaque
//	tributary.topic                the topic
//
// as Kafka Connect's Iceberg sink stores kafka.connect.offsets.<table>.<group>.
// A snapshot names the partitions of its batch only. The same offsets and
// origin keys are set as table properties in the same commit, so they
// survive expire_snapshots of our snapshots.
//
// # Exactly once
//
// Committed reads, per partition, the offsets and origin marks of the
// newest snapshot naming it, walking from the current snapshot through its ancestors (a Spark
// rewrite_data_files snapshot in between names none and is walked through),
// then the table properties for partitions whose snapshots were expired.
// The loader resumes from those offsets: records before them are in the
// table, records from them on are not, because the offsets and the data
// files became visible in one atomic catalog commit (a compare-and-swap of
// the metadata location). A crash before that commit leaves only
// unreferenced files (garbage for orphan-file removal), never a half batch.
//
// A commit attempt is one catalog CommitTable call, with the requirement
// that the table is still at the snapshot the attempt was built on. When
// it fails (another writer committed first, or the outcome is unknown: a
// lost response), Append reloads the table and first checks whether its
// offsets are already there: if so the earlier attempt landed and Append
// returns; if not, it commits the SAME data files again on the reloaded
// table. An attempt that is still in flight cannot land after a retry
// does, since both require the head the other replaced: so a batch's files
// are in the table at most once, and exactly once when Append returns nil.
// Retries are counted (Catalog.Retries, for a Prometheus counter). This
// needs one writer per Kafka partition, which the loader's partition
// ownership gives; other writers (Spark's maintenance) are free.
//
// A batch without records commits nothing: the offsets only move with
// data, and a loader that restarts re-reads (and drops again) records it
// had filtered out.
//
// # Concurrency
//
// A Catalog of type sql is safe for concurrent use. One of type hive is
// not: iceberg-go's Hive catalog shares one Thrift client, and concurrent
// calls through it were seen to hang, so its callers make one call at a
// time (the loader does, per process). A Table is used by one goroutine at
// a time; any number of processes may commit to the same table.
package icetable
