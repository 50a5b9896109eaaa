// Package loader loads Kafka topics into HDFS (or a local directory) as
// Avro object container files, or into Apache Iceberg tables, committing
// data and offsets together, so
// that every record of the consumed range lands exactly once whatever
// crashes in between (the paper's §4 load jobs; Camus, Gobblin,
// kafka-connect-hdfs).
//
// # Output layout
//
// Package hours owns the data layout (it names, parses and lists the
// files for the loader, compaction, retention and every reader):
//
//	<base>/<topic>/<yyyy>/<MM>/<dd>/<HH>/<topic>+<partition>+<first>+<last>+s<schemaID>.avro
//	<base>/_errors/<topic>/<topic>+<partition>+<first>+<last>.jsonl
//	<base>/_loader/<job>/<topic>/<partition>/manifests/<seq>.json   (+ <seq>.published)
//	<base>/_loader/<job>/<topic>/_partitions   the topic's partition count, written at the start of a run
//	<base>/_loader/<job>/<topic>/<partition>/tmp/<run-id>/...
//
// With path.format (Config.PathFormat, kafka-connect-hdfs's
// TimeBasedPartitioner pattern, e.g. 'dt'=YYYY-MM-dd/'hr'=HH) the
// partition directories follow the pattern instead (hours.Layout; the
// topic's _partitioning marker records it, with the duration and the
// stored columns, and a loader configured otherwise for the topic refuses
// to start). Only UTC is supported as timezone; locale changes nothing.
//
// # Stored Kafka columns
//
// store.kafka.keys, store.kafka.headers and store.kafka.coordinates
// append kafka_key, kafka_headers and kafka_topic/kafka_partition/
// kafka_offset to every record (hours.Stored): the file's schema is the
// writer schema with those fields appended, and a record is the producer's
// datum followed by their encoding. kafka-connect-hdfs writes keys and
// headers to separate files; columns are used here because a table (Hive,
// Spark, Trino) reads one location in one format and cannot join side
// files to values, and compaction carries columns into Parquet for free.
// A value schema that is not a record or has a field of a column's name
// makes its records bad records, the reason naming the field.
//
// A record goes to the hour (UTC) of its own timestamp, or to its time
// partition of partition.duration.ms (Config.PartitionDuration; package
// hours lays out sub-hour partitions as .../<HH>/<mm>/ and records the
// duration in <base>/<topic>/_partitioning, which the loader writes before
// the topic's first file and checks on every start: a topic's duration
// cannot change). A data file holds
// records of one partition, one hour and one writer schema (the schema the
// payload's Confluent frame names, fetched once from the registry and
// written into the file header); first and last are the offsets of its
// first and last record. Files are written through one small writer
// interface per format (format.go); Avro is the only one. Records are the
// producer's Avro binary datums, validated against the writer schema and
// copied unchanged into container-file blocks (deflate, snappy or null).
// Names starting with "_" or "." are not data. Bad records (not framed, unknown schema id, bytes
// that do not decode) go, one JSON object per line with topic, partition,
// offset, timestamp, reason, key, value and headers, to _errors; they are
// counted, never dropped and never stop a load.
//
// # Commit protocol
//
// Each partition of a job has its own chain of manifests, written only by
// the process that owns the partition (the only one without ZooKeeper; the
// holder of /loaders/<job>/owners/<topic>/<p> with it). A commit of a
// partition:
//
//  1. writes the data files (and the errors file) under tmp/<run-id>/ and
//     closes them (steps 1-2 of the crash hook);
//  2. writes the manifest — the moves tmp -> final name, the next offset,
//     the mirror high-water marks, the counts and the audit events — under
//     tmp/<run-id>/ (step 3);
//  3. renames it to manifests/<seq>.json: the commit point (step 4). One
//     rename of a complete file, so a manifest is either there whole or not
//     at all. HDFS rename replaces a destination, so the protocol never
//     relies on a rename failing: sequence numbers are unique because one
//     process owns the chain;
//  4. applies the moves (step 5 after the first, 6 after the last); a move
//     whose source is gone was done before, so redoing them is harmless;
//  5. publishes the audit events and writes <seq>.published (steps 7, 8);
//     events not confirmed published are carried into the next manifest;
//  6. prunes manifests older than the newest three.
//
// The newest manifest is the partition's offset state: there is no other.
// CommittedThrough is the smallest watermark over the partitions
// _partitions counts, a partition without a commit being the zero time, so
// that no hour closes (and becomes ready) while a partition has committed
// none of it. Jobs lists the jobs with state under a base, so that a
// caller can tell a mistyped job (no state) from one that committed
// nothing yet.
//
// # Topics and counts
//
// topics is a regular expression over whole topic names; one that matches
// no topic (internal "__" topics aside) fails Run with ErrNoTopics, naming
// the expression and topics that exist, while Serve warns each cycle and
// loads the topics once they appear. A run's Summary counts record_bytes
// (key and value bytes as the brokers held them, what the audit counts)
// apart from file_bytes (the size of the data files committed).
//
// Recovery, when a process takes a partition: read the newest manifest,
// redo its moves, re-publish its audit events unless marked published,
// then delete everything under tmp/ (uncommitted data of crashed runs),
// and continue from its next offset. A crash before the commit point
// loses only uncommitted temporary files; a crash after it is finished by
// recovery. Readers never see a partial data file: files are complete
// before they are moved into the output. Config.CrashAt (a test hook; the
// command sets it from TRIBUTARY_LOADER_CRASH_AT=N[:K]) SIGKILLs the
// process the K-th time it reaches step N.
//
// # Iceberg tables (table.format=iceberg)
//
// With table.format=iceberg (Config.TableFormat) each topic's records go
// to an Apache Iceberg table (package icetable; the catalog is set by
// Kafka Connect's Iceberg sink keys iceberg.catalog.type sql|hive,
// iceberg.catalog.uri, iceberg.catalog.warehouse, ..., checked when the
// job starts) named TableName(topic) in iceberg.namespace. output.uri
// still holds the job's state (_loader/<job>/) and _errors. The table's
// schema follows each record's writer schema (its Confluent frame): a
// schema id not seen before evolves the table (Table.Evolve: added fields
// become columns) before the record counts; a type change stops that
// partition in front of the record with icetable.ErrTypeChange (naming
// topic, field and both types), nothing of it committed, while the other
// partitions load on, and the run fails naming it. A commit's records are
// written with the newest writer schema seen, older ones resolved to it;
// a column a record's writer lacks is null, as Iceberg reads a column
// added after a data file. Bad records go to _errors as in the Avro mode.
//
// A commit with records has ONE commit point, the Iceberg catalog commit
// (Table.Append: Parquet data files, then one snapshot). The commit's
// manifest, the same Manifest as above (next offset, origin marks and
// gaps, counts, the audit events, the _errors move), travels in that
// snapshot as the partition's opaque state (tributary.origin.<p>, beside
// tributary.offsets.<p>), so that data, offsets, origin marks and audit
// events become visible together or not at all:
//
//  1. records are decoded into memory; the errors file is written under
//     tmp/<run-id>/ and closed (steps 1-2);
//  2. step 3, then Table.Append writes the data files and commits them
//     with the manifest: the commit point. A crash at step 3, or inside
//     Append once the data files are written and before the catalog
//     takes the snapshot, leaves only unreferenced files (the data files
//     in the warehouse, garbage for orphan-file removal; the errors file
//     under tmp/, removed by recovery): the table's offset is the old one,
//     so the records are read again and land once. A commit whose outcome
//     is unknown is settled by icetable (it looks for its offsets before
//     trying again);
//  3. step 4, then the manifest is copied to manifests/<seq>.json: not a
//     commit point, but what the published markers, pruning, States and
//     CommittedThrough read. Then steps 5-8 as above: the errors move,
//     the audit events, <seq>.published. A crash after the commit point
//     is finished by recovery from the snapshot's manifest: the moves are
//     redone and the events re-published (same IDs: the audit service
//     counts them once) unless marked published, so the audit tier counts
//     every committed record once, exactly as in the Avro mode.
//
// A commit without records (only bad records or duplicates, or a
// watermark) changes no table (icetable commits no empty snapshot): its
// commit point is the manifest's rename, as in the Avro mode. Recovery,
// on taking a partition, reads the table's committed state
// (Table.Committed: the newest snapshot naming the partition, or the table
// properties) and the newest manifest file, takes the one with the higher
// sequence number (the table's, copied into manifests/ if newer) and
// continues as above. Records of one commit are held in memory until it
// (commit.records bounds them).
//
// Metrics: tributary_loader_iceberg_commit_seconds times each Append, and
// tributary_loader_iceberg_commit_retries_total counts commits tried again
// after a concurrent writer (the job's other partitions, Spark's
// maintenance) or an unknown outcome.
//
// # Exactly once across mirror duplicates
//
// A record with the mirror's origin header (package mirror/origin,
// "tributary.origin": "<source>/<partition>/<offset>") is dropped when its source offset is at
// or below the high-water mark of (source, source partition) kept in the
// partition's manifest, unless the offset is in one of the mark's gaps;
// the mark advances with every landed record. The mirror keeps source
// partition p in target partition p, so a source partition's replays
// arrive in one target partition, but not always in order: a record the
// target refused is sent again, from the mirror's last commit, after
// later records of its partition landed. So when the mark jumps over
// offsets, the jump is kept as a gap (manifest origin_gaps), and the first
// copy of an offset in a gap lands and fills it (a source partition not
// seen before has all offsets below its first one as a gap: its first
// record may be the refused one). At most 64 gaps are kept
// per source partition (source offsets without a record, such as
// transaction markers, never fill theirs); the lowest are forgotten first.
//
// # Audit
//
// Tier "loader", instance = the job name. Every commit records one event
// per (topic, audit window of the record timestamps) with ID
// "loader/<job>/<topic>/<partition>/<first>-<last>/<windowStartMs>"
// (deterministic: a re-publish after a crash carries the same ID, which
// the audit service counts once). Only committed records are counted; bad
// records count as Errors.
//
// # Runs, scale-out, concurrency
//
// Run reads every partition from its committed offset up to its end offset
// as listed when the run starts, committing every CommitRecords records and
// at the end. The end is the last stable offset under IsolationLevel
// read_committed (the default: records of aborted transactions never
// land) and the high watermark under read_uncommitted; transaction markers
// are read (kgo.KeepControlRecords) and passed without landing, so a
// partition ending in one reaches its end. Serve repeats runs every CommitInterval. With ZooKeeper,
// processes register under /loaders/<job>/members, take every n-th
// partition by their rank, then any free partition, then wait for
// partitions held by peers (a killed peer's are freed when its session
// expires); a run returns once every partition was loaded by it or a peer.
// Before the commit point a process checks that its session has not
// expired. A Loader's Run and Serve must not run concurrently; Progress
// may be read from any goroutine.
package loader
