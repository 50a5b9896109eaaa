// Package tables registers the loader's output as tables in a Hive
// Metastore, as kafka-connect-hdfs's hive.integration does, so that Spark
// SQL, Hive, Trino and every other metastore client can query it.
//
// # Contract
//
// A Catalog's Sync(ctx, topic, want) makes the topic's table show exactly
// the partitions in want: it adds the missing ones, alters those whose
// location, format or writer schema changed (an hour switched from Avro to
// Parquet by compaction) and drops the others (retention). Sync is a
// reconcile: calling it again with the same want changes nothing, an
// interrupted Sync is finished by the next one, and partitions are added
// with add_partitions' ifNotExists, so nothing is registered twice. The
// caller (hour readiness) decides which partitions are wanted; package
// hours decides where their files are. A location is a URI, or an
// absolute path of Config.FileSystem. A topic's table is created by its
// first Sync that wants a partition (or with Config.TableLocation set).
//
// # Tables (frozen: readers' queries depend on it)
//
// One EXTERNAL table per topic, named by hive.table.name (${topic}
// replaced, lower-cased, characters other than letters, digits and _ as
// _), in hive.database (created if missing). One partition column,
// PartitionColumn "hour" (string, the partition's start in UTC as
// 2006-01-02-15; -04 and -05 minutes and seconds appended for shorter
// partition.duration.ms) — or, for a topic with a Hive-style path.format
// (Partition.Columns, from hours.Layout), the pattern's names (dt, hr, ...)
// with the values of the directory names. A table's partition columns
// cannot change (Sync refuses, naming both), and a value field named like
// one is refused. The stored Kafka columns (Partition.Stored: kafka_key,
// kafka_headers, kafka_topic, kafka_partition, kafka_offset) are appended
// to the table's and each partition's columns and Avro schema literal, as
// the files hold them. The columns are those of the latest schema of
// the topic's value subject (<topic>-value) in the schema registry, mapped
// as Hive's AvroSerDe maps Avro (see columns): records as struct, arrays,
// maps, a union with null as its other branch, date, timestamp-millis and
// decimal as Hive's types, the other logical types as their underlying
// type (Hive 2.3's AvroSerDe knows no others; package compact's Parquet
// gives the same numbers). A union of several non-null types is
// struct<member0:A,member1:B,...> (as Spark's Avro reader and compact's
// Parquet map it), not Hive's uniontype, which Spark cannot read: one
// such column made the whole table unreadable. Spark derives an Avro
// table's columns from its avro.schema.literal and reads every Avro
// partition with it as the reader schema, so a top-level field of such a
// union is registered in the literal as <name>_members (MembersSuffix), a
// nullable record defaulting to null: Avro partitions show it as null
// (Avro resolution skips the renamed union). Parquet partitions show its
// members: the table's serde then has parquet.column.index.access=true,
// so that Hive's Parquet reader matches the files' columns (which keep the
// field's own name) to the table's by position — set only while every
// Parquet partition's columns are the table's first, in order; otherwise
// (a schema version that added fields to a topic storing Kafka columns,
// which come last in the files) it is left unset and the column is null
// in Parquet partitions too. A union of several
// types nested deeper stays uniontype in the literal (unreadable to Spark;
// other engines read it). The table's serde is
// Avro with avro.schema.literal set to that schema, and its columns are
// also given explicitly (a standalone metastore cannot derive them).
//
// Each partition has its own columns, serde and formats: Avro partitions
// the AvroSerDe with their writer schema as avro.schema.literal, Parquet
// partitions the ParquetHiveSerDe. A reader decodes each partition as it
// was written and shows the table's newer columns as null; Spark does so
// with its default settings, because the table's own format is Avro.
// Spark reads every Avro partition with the table's literal as the reader
// schema, so a newer field's default (not null) shows in an older Avro
// partition and null in an older Parquet one: give added fields a null
// default where the two must agree.
//
// # Schema evolution
//
// schema.compatibility BACKWARD (the default) or FULL: a newer schema
// version that adds fields adds columns at the end of the table; a column
// the newer schema drops stays (read as null). A version that changes a
// column's type (or a partition whose writer schema does) is refused with
// ErrIncompatible, naming the topic, the field and both types, before
// anything is changed, and the topic's tributary_tables_schema_blocked
// gauge is 1 until a Sync succeeds: registration of that topic stops, it
// is never skipped silently. Nested changes inside a struct column count as
// a type change.
//
// # Metastore
//
// The metastore's Thrift API (the generated client of
// github.com/beltran/gohive/hive_metastore): a plain socket, buffered
// transport and binary protocol, hive.metastore.uris tried in order, each
// dial bounded by Config.DialTimeout and each call by Config.CallTimeout.
// A transport failure closes the connection and is ErrUnavailable; the
// next Sync dials again. Only calls Hive 3.1 and 4 both serve are used
// (get_table_req, not get_table).
//
// Registered lists a topic's partitions as the metastore holds them
// (value, location, format, createTime), for checks and tools.
//
// A Metastore is safe for concurrent use; its calls are serialised on one
// connection.
package tables
