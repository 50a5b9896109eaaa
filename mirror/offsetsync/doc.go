// Package offsetsync is the mirror's record of where source records
// landed on the target, and the exact translation of source offsets it
// allows. The mirror writes it (to mirror.OffsetSyncsTopic on the target,
// one partition, cleanup.policy=compact); the mirror's checkpoints and
// `tributary mirror translate` read it.
//
// # Format (frozen)
//
// One record per run: a stretch of Count records whose source offsets
// SourceOffset, SourceOffset+1, ... of (Source, Topic, Partition) landed,
// in that order and with nothing between them, at target offsets
// TargetOffset, TargetOffset+1, ... of (TargetTopic, Partition). A run
// ends where either side has a gap: a source offset without a record (a
// transaction marker, a compacted or a skipped record), another source's
// record between them on the target, a restart. Fields are Kafka protocol
// types (big-endian; STRING = int16 length + UTF-8), as MirrorMaker 2's
// own records are:
//
//	key:   version INT16 (0), source STRING, topic STRING, partition INT32, source offset INT64
//	value: version INT16 (0), target topic STRING, target offset INT64, count INT64
//
// The mirror writes a run again, under the same key and with a larger
// Count, as it grows, so compaction keeps one record per run.
//
// Why not MirrorMaker 2's mm2-offset-syncs.<target>.internal: its record
// is keyed by topic and partition alone (compaction leaves only the
// latest sync of a partition) and holds one offset pair, not a run, so
// it can neither keep the history nor say where a gap is; MirrorMaker 2
// therefore rounds translations down (KAFKA-12468) and cannot translate
// past the last sync (KAFKA-14666).
//
// # Translation
//
// Store.Translate maps a committed source offset c (the next record to
// read) to the first target record whose source offset is at or past c:
// a group resumes on the target after exactly what it committed. When a
// range was mirrored twice (a mirror restarted from an older commit), the
// latest copy is chosen: everything after it is new. An offset past the
// end of what was mirrored translates to nothing (ok false), except the
// offset right after it, which translates to the target offset after it.
//
// A Store is not safe for concurrent use.
package offsetsync
