// Package retention deletes the hours of the loader's output layout (see
// package hours) older than a per-topic age, Avro or compacted Parquet
// alike, and reports what it removed.
//
// An hour is expired when its end is at least the topic's age before now.
// With Config.Catalog the catalog is first synced with the published
// partitions less the expired ones, so that it never points at a deleted
// location. Then the hour's compaction generation directories are
// deleted, then the hour directory with one RemoveAll (a crash in between
// leaves the hour listed, and the next run deletes the rest; a reader
// following the rule meanwhile gets ErrCorruptManifest for that expired
// hour); a reader that already opened files of an expired hour may fail
// (as with Kafka's own retention). Emptied day, month and year directories
// are removed afterwards. A crash in between leaves only empty
// directories, which the next run removes.
//
// Safe for one run at a time per base (the scheduler's job lock). Give
// compaction and retention of one base ages far apart: retention does not
// wait for a compaction working on an hour it deletes (that compaction
// then fails, and the hour is gone either way).
package retention
