// Package hours is the loaded-data contract: it owns the loader's output
// layout, names, parses and lists the data files for everyone (the loader,
// compaction, retention, the audit service, the table catalog and every
// reader; nobody else formats or parses these names), it is the rule by
// which a reader decides which files of a partition are its data, before,
// during and after compaction, it reads the partitions' readiness, and it
// states what a table catalog is given (Catalog, Partition). Package
// hours/rows reads the files.
//
// It sits under all of its users and imports none of them (nor a Parquet
// library; imports_test.go checks it and that audit/service, jobs/tables,
// jobs/retention and loader do not depend on compaction): a reader of an
// hour's state or a catalog must not pull in the compactor. The catalog
// types stay in this package rather than a sub-package because they are
// made of it: a Partition is a Status's location, format and schema with
// the topic's Layout columns and Stored columns, and what is published is
// decided by the readiness rule below.
//
// # Layout (written by the loader, frozen)
//
//	<base>/<topic>/<yyyy>/<MM>/<dd>/<HH>/<topic>+<partition>+<firstOffset>+<lastOffset>+s<schemaID>.<format>
//
// (LoaderFile; Dir gives the hour directory) by the records' timestamps in
// UTC; the loader's only format is "avro". The hour is the default time
// partition. A topic loaded with another partition.duration.ms (as
// kafka-connect-hdfs's TimeBasedPartitioner names it; ValidDuration: whole
// minutes dividing the hour, or whole hours dividing the day) says so in
// its marker <base>/<topic>/_partitioning (JSON {"version": 1,
// "partition_duration_ms": N}, written by the loader before its first
// file of the topic; Partitioning reads it). Partitions of an hour or more
// keep the hour layout (<HH> is the partition's first hour); shorter ones
// add the minute of their start:
//
//	<base>/<topic>/<yyyy>/<MM>/<dd>/<HH>/<mm>/...
//
// (DirFor). Hour describes one partition of either kind, Duration and End
// included.
//
// # path.format (Layout)
//
// A topic loaded with path.format (kafka-connect-hdfs's TimeBasedPartitioner
// pattern; see layout.go for the letters and rules) has its partition
// directories formatted by it instead, e.g. 'dt'=YYYY-MM-dd/'hr'=HH:
//
//	<base>/<topic>/dt=<yyyy>-<MM>-<dd>/hr=<HH>/<loader files>
//
// recorded in _partitioning format version 2 ({"version": 2,
// "partition_duration_ms": N, "path_format": "...", and the stored Kafka
// columns "store_kafka_keys", "store_kafka_headers",
// "store_kafka_coordinates"}; ReadLayout). A Hive-style pattern (every level
// 'name'=...) gives the table's partition columns (Layout.Columns, Values).
// List accepts only canonical directories of the layout. Generation
// directories are siblings as in the default layout (hr=05.c1), and every
// rule below holds unchanged. Stored (stored.go) names the Kafka columns
// the files hold after the value's fields and makes their schema
// (FileSchema) and encoding. Names starting with "_" or "." are not data (<base>/_loader,
// <base>/_errors, a partition's _SUCCESS and _compacted, ...).
//
// # Readiness
//
// A partition is ready once its directory holds "_SUCCESS" (Hadoop's
// convention, which downstream schedulers watch), written by an atomic
// rename of _SUCCESS.tmp by package compact when the audit proved the
// partition complete, or at completeness.timeout with its shortfall
// (Success: JSON, format version 1, frozen). StatusOf and Statuses give a
// partition's state: loading (the loader has not committed past its end
// plus the delay), waiting-for-audit, ready, ready-incomplete, compacted.
// Published lists what a table catalog holds: every ready partition at its
// location (below), in one format. Report gives each partition's state
// with its audit counts (HourReport: those _SUCCESS recorded, or an
// Audit's current ones while it waits), as `tributary loader hours` prints
// and the audit service serves them; Audit is the audit service's counts
// as compaction's readiness check and Report take them.
//
// # Catalog
//
// A table catalog (jobs/tables' Hive Metastore; FileCatalog, a local JSON
// file {"<topic>": [Partition, ...]} replaced by a rename, for tools and
// tests) implements Catalog: Sync(ctx, topic, want) makes the topic's table
// hold exactly want, idempotently, so a job that crashed converges by
// syncing again. want is PublishedPartitions: one Partition per published
// partition (topic, start, duration, location, format "avro" or "parquet",
// schema id, the Hive-style partition columns and values of its Layout, its
// Stored columns). SyncCatalog computes and syncs it; compaction calls it
// first in a run, after marking hours ready and after each commit,
// retention before it deletes (the hours to delete left out). A Catalog that refuses a topic until someone
// acts (a schema change its table cannot take) returns an error wrapping
// ErrCatalogBlocked.
//
// # Compaction generations
//
// Compaction (package compact) writes a partition's Parquet files, named
// <topic>+s<schemaID>+<nnn>.parquet (CompactedFile), into a generation
// directory beside the partition directory, never inside it:
//
//	<base>/<topic>/<yyyy>/<MM>/<dd>/<HH>.c<N>/     (or .../<HH>/<mm>.c<N>/)
//
// (GenerationDir), so that a reader of a partition location (Hive, Spark,
// Trino list every file of a location in one format and fail on a
// subdirectory) sees only Avro in the partition directory and only Parquet
// in a generation directory. The generation directory's name is not hidden
// ("_" or "."), since Hadoop's FileInputFormat drops a hidden input path.
// Compaction commits with the partition's manifest "_compacted" (JSON,
// written by an atomic rename; format version 2 names the generation;
// version 1, written by older compactions, has its outputs in the hour
// directory beside the Avro). Files the loader writes into a compacted
// partition (records later than the delay) are late files: they stay in
// the partition directory, the "late location", until a later compaction
// (a recompaction) writes generation N+1 with generation N's outputs and
// theirs, and commits it the same way.
//
// # The reader rule
//
// Every reader of the layout must follow it:
//
//   - A partition without "_compacted": its data are its loader files
//     (names that parse as LoaderFile) in its directory. Generation
//     directories and CompactedFile names are staged, uncommitted, and
//     ignored.
//   - With "_compacted" version 2: the Parquet files the manifest names as
//     outputs, in generation directory GenerationDir(h, Generation), plus
//     any loader file in the partition directory the manifest does not
//     name as an input (a late file). Other generations are being deleted
//     or were never committed, and are ignored.
//   - With "_compacted" version 1: the outputs in the hour directory plus
//     its loader files the manifest does not name as inputs.
//
// So a reader sees an hour's records exactly once, whatever step a
// compaction crashed at. HourData, TopicData and DataFiles implement the
// rule; Status.Location is the directory a table catalog registers: the
// partition directory (Avro) until compacted, then the committed
// generation directory (Parquet), whose late files wait for recompaction.
//
// Functions here only read (FileCatalog's Sync, which writes its own file,
// aside); they are safe for concurrent use. A FileCatalog serialises the
// Syncs of one process only.
package hours
