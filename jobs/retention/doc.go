// Package retention deletes the hours of the loader's output layout (see
// package hours) older than a per-topic age, Avro or compacted Parquet
// alike, and reports what it removed.
//
// An hour is expired when its end is at least the topic's age before now.
// It is deleted with one RemoveAll of its directory, so a reader listing
// the topic sees the hour or not; a reader that already opened files of an
// expired hour may fail (as with Kafka's own retention). Emptied day, month
// and year directories are removed afterwards. A crash in between leaves
// only empty directories, which the next run removes.
//
// Safe for one run at a time per base (the scheduler's job lock). Give
// compaction and retention of one base ages far apart: retention does not
// wait for a compaction working on an hour it deletes (that compaction
// then fails, and the hour is gone either way).
package retention
