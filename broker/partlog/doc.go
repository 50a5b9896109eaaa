// Package partlog, the partition log, is Tributary's storage engine: one
// Log per topic partition, holding Kafka record batches (magic 2) in
// segment files, byte for byte as producers sent them with the assigned
// base offset patched in. It has no network code; the broker serves Views
// of it with sendfile.
//
// # On-disk format (frozen)
//
// A partition directory "<topic>-<partition>" holds, per segment, files
// named by the segment's base offset as 20 decimal digits:
//
//   - NNN.log: concatenated record batches, offsets increasing; without
//     gaps unless the partition has a cleaner-checkpoint file (see
//     Compaction), which the cleaner and AppendReplica write before the
//     first gap they leave. A batch's base offset is outside its CRC, so
//     without that file a batch not starting where the previous one ended
//     is corruption (reads fail, recovery truncates there).
//   - NNN.index: sparse offset index, 8-byte entries (relative offset uint32,
//     position uint32) in Kafka's convention: the batch starting at that
//     position ends with that offset (its last offset). A batch gets an
//     entry when IndexIntervalBytes or more were written since the previous
//     one. A lookup takes the last entry at or below the wanted offset and
//     walks forward past batches that end below it, as Kafka's does.
//   - NNN.timeindex: 12-byte entries (timestamp int64, relative offset
//     uint32) in Kafka's convention: the segment's largest batch max
//     timestamp so far and the last offset of the first batch carrying it.
//     An entry goes with an .index entry when that timestamp grew since the
//     previous entry, and one more when the segment is sealed, so the last
//     entry holds the segment's largest timestamp; timestamps and offsets
//     strictly increase and every entry names a batch of its own segment.
//
// Kafka 2.8's DumpLogSegments --verify-index-only accepts both files.
//
// The active segment's index entries are kept in memory; both index files
// are written whole (atomically) when the segment is sealed, at roll and at
// Close. After a crash the active segment is always rescanned (see below),
// so its index files are never needed before then.
//
//   - NNN.txnindex: the aborted transactions whose ABORT markers the
//     segment holds, Kafka's 34-byte entries (see Transactions); only
//     segments with such markers have one.
//
// and, for the partition, NNN.tributary-producers (producer idempotence
// state after every batch below NNN with each producer's last append time
// and ongoing transaction, CRC-32C protected, version 3; written at each roll and at Close; our own
// format, so it does not carry Kafka's ".snapshot" name), recovery-point
// (offset below which all data was fsynced, with a CRC),
// leader-epoch-checkpoint (below), log-start-offset (a log start offset
// that DeleteRecordsBefore moved into a segment: offset int64 | crc32c, as
// recovery-point; Open starts at the higher of it and the first segment's
// base) and .clean-shutdown (written last by Close, removed by Open).
// All integers are big-endian. Index and snapshot files are replaced
// atomically (write, fsync, rename).
//
// # Writing
//
// Append parses only batch headers: magic, lengths, record count, last
// offset delta and the CRC-32C over attributes..end; records are never
// decoded, compressed batches stay compressed. A byte slice of several
// batches is appended all or nothing. The active segment rolls when the next
// append would exceed SegmentBytes or it is older than SegmentMs (counted
// from its creation or from Open).
//
// Idempotent producers (producer ID >= 0) are checked under the append lock:
// a retry of one of the producer's last five batches returns the original
// offsets with Duplicate set; with the same epoch the base sequence must
// follow the last one (wrapping after MaxInt32 to 0); a newer epoch must
// start at sequence 0; an older epoch is rejected. A producer the log does
// not know may start at any sequence, as in Kafka >= 2.5 after its state
// expired.
//
// Producer state expires (Kafka's producer.id.expiration.ms): a producer
// whose last append, by the broker clock Config.Now, is ProducerIDExpiration
// old or more is unknown from then on, so its next batch starts it afresh at
// any sequence and epoch. (Kafka compares the batch's max timestamp instead;
// a mirror re-sending old events with their CreateTime would then be
// forgotten at once.) Append only compares a timestamp; the entries are
// deleted by ApplyRetention and before each snapshot is written. Retention
// also forgets producers whose last batch is below the new log start offset.
// Loading a snapshot applies both rules again, so a snapshot taken before a
// producer expired never brings it back. Batches re-read from segments at
// recovery count as appended at their segment file's modification time.
//
// # Leader epochs
//
// Each batch carries the partitionLeaderEpoch its leader stamped (header
// bytes 12..15, outside the CRC). Append and AppendReplica feed the leader
// epoch cache: a batch whose epoch is greater than the latest cached one
// records (epoch, base offset); -1 and older epochs record nothing. The
// cache is Kafka's leader-epoch-checkpoint file, frozen format, text:
//
//	0
//	<number of entries>
//	<epoch> <start offset>     (one line per entry, oldest first)
//
// It is replaced atomically (temp, fsync, rename, directory fsync) when an
// append changes it, before the batch is written: a crash in between leaves
// it ahead of the log, and Open cuts it back to the log end offset. Unclean
// recovery also drops the entries from the first rescanned segment on and
// takes the epochs again from the rescanned batches. A missing or unreadable
// file is rebuilt from the batch headers at Open (epochs never decrease
// along a log, so only segments whose first and last epochs differ are
// walked). Retention trims it as Kafka's truncateFromStart does: the last
// epoch starting below the new log start offset is kept, moved up to it.
// LatestEpoch and EndOffsetForEpoch (OffsetsForLeaderEpoch) read it;
// EndOffsetForEpoch answers (-1, -1) for an epoch below the first cached
// one, as Kafka 1.x did, where Kafka 2.x returns (epoch, first start).
//
// # Replication
//
// A follower appends what it fetched with AppendReplica: whole batches
// (a fetch response's partial last batch must be cut off first) that keep
// their offsets, epochs and timestamps, starting at or after the log end
// offset, each after the previous one (else ErrOffsetMismatch). A batch
// starting past the expected offset follows a gap the leader's cleaner
// left, and the log end jumps over it, as in Kafka; a batch may hold fewer
// records than offsets (rebuilt by the leader's cleaner). Append, which
// assigns offsets itself, still refuses both. When the active segment
// rolls before such a batch, the new one is named by the batch's base
// offset. The segment, index and time index bytes come out identical to
// the leader's when the batches arrive one per call under the same
// configuration and no gap. Producer state is updated from them without
// judging sequences, so a follower that becomes leader detects retries of
// batches it only replicated.
//
// TruncateTo(offset) cuts a divergent tail at a batch boundary (or in a
// gap, the log end then lying in it until the next batch): later
// segments are deleted, the segment holding offset is truncated at that
// batch, its indexes rebuilt from a walk of what stays, and sealed, and a
// new active segment starts at offset. The producer state is rebuilt from
// the newest snapshot at or below offset plus the kept batches after it
// (snapshots past the cut are deleted, one is written at the cut), the
// epoch cache is cut, and the recovery point moves back to offset (a Flush
// that began before does not move it forward again). All of it is fsynced,
// directory included, before TruncateTo returns: a crash afterwards cannot
// bring dropped bytes back. A TruncateTo that fails half way leaves the Log
// refusing appends and truncations and not marked clean at Close, so the
// next Open recovers it from the files.
//
// TruncateFullyAndStartAt(offset) empties the log and restarts it at any
// offset (start = end = offset), for a follower whose fetch offset is
// outside the leader's range; same durability.
//
// ReadBelow is Read limited to batches whose last offset is below a limit
// (the high watermark for consumers).
//
// # Durability and recovery
//
// Data is fsynced when a segment rolls, at Close, every FlushIntervalMessages
// records (in the Append that crosses the count) and every FlushInterval (one
// goroutine per Log, only when FlushInterval > 0). Each fsync advances the
// recovery point. Open after a clean shutdown reads only the active segment's
// index and the batch headers after its last entry. Without the marker, the
// segments from the one holding the recovery point on are scanned with CRC
// checks; the log is truncated at the first bad batch (later segments are
// deleted) and their indexes rebuilt. Producer state comes from the newest
// snapshot plus the batch headers after it, or, without one (a crash before
// the first roll's snapshot was written), from the headers of the last two
// segments. Recovery work therefore depends on
// the unflushed tail, not on the size of the log.
//
// Index files that fail cheap checks are rebuilt when first used: size,
// ordering and bounds of the entries, a missing file, and the last entry of
// each file read against its batch (the .index entry's batch must end at its
// offset; the .timeindex entry's batch, found through the .index, must end
// at its offset with its timestamp), a few header reads per segment.
//
// # Upgrades
//
// Older versions indexed a batch by its base offset and wrote .timeindex
// entries (largest timestamp before the batch, the batch's base offset) with
// a last one for the offset after the segment, and named producer snapshots
// NNN.snapshot. An old .timeindex always fails the last-entry check (its last
// entry lies past the segment), so old index files are never used: the whole
// file pair is rebuilt, the last entries speaking for the file because every
// file is written at once by one version. Open renames NNN.snapshot files
// that are ours (they start with our magic; a Kafka one is left alone) to
// NNN.tributary-producers, so no producer state is lost. Their presence marks
// the first Open after an upgrade: that Open also checks every sealed
// segment's index files at once, rebuilding the old ones (one header walk of
// each segment, once) and then dropping them from memory again; later Opens
// leave the check to each segment's first use. Bytes are CRC-checked before a Read returns them unless
// this process wrote or checked them already, so a corrupt byte is never
// returned: Read returns ErrCorruption for a damaged batch instead.
//
// # File descriptors
//
// A Log holds no descriptor of its own: every segment's .log file, the
// active one included, is opened through a FileCache (Config.Files, shared
// by all the Logs of a broker) that keeps at most its capacity open and
// closes the least recently used idle one to make room; a file in use (an
// Append, a Read, a View not yet released) is never closed. Index files
// are read into memory and closed. Writing checkpoints, snapshots and index
// files opens a file for a moment. When the process is out of descriptors
// (EMFILE), opening a new partition fails with ErrNoDescriptors; reads and
// appends first close an idle cached file; rolls, flushes, recovery and
// Close also use the cache's reserve of spare descriptors, so that what is
// open stays durable.
//
// # Compaction
//
// A log with Config.Compact is cleaned by Clean (cleaner.go), called by the
// broker's cleaner threads for the log with the highest dirty ratio
// (Cleanable). The checkpoint file "cleaner-checkpoint" (offset | CRC-32C,
// like recovery-point) holds the first dirty offset. A pass maps each key
// of the dirty records, from the checkpoint up to the first segment that is
// active or holds records younger than MinCompactionLag, to its last
// offset, in an offset map of 128-bit key hashes bounded by
// CleanOptions.DedupeBufferSize (a larger dirty section takes several
// passes, the checkpoint advancing to where the map stopped). It then
// rewrites every sealed segment below that point, in groups whose sizes add
// up to SegmentBytes, named by the group's first base offset: a record is
// dropped when a later offset of its key is mapped, when it has no key, or
// when it is a tombstone (null value) whose timestamp is more than
// DeleteRetention old. A batch that keeps every record is copied as is; one
// that keeps some is rebuilt with the same base offset, last offset delta,
// base timestamp, attributes (the same codec, via franz-go), leader epoch,
// producer id, epoch and base sequence, the kept records' bytes unchanged;
// an emptied batch goes. So offsets keep their values and gaps appear
// (Append still requires batches without inner gaps); producer state,
// which lives in memory and in the snapshots, is not affected. Cleaned
// files get the group's newest modification time.
//
// The swap is Kafka's: the group is written as NNN.log.cleaned (with
// .index.cleaned and .timeindex.cleaned) and fsynced; under the appender
// lock a manifest "cleaner-swap" (base | end | CRC-32C: the segment NNN
// replaces the segments with bases in [base, end)) is written, the files
// are renamed to .swap (the .log last, which commits), the replaced
// segments' files deleted and the .swap files renamed to their final
// names, each step followed by a directory fsync; then the manifest goes.
// Open finishes or undoes an interrupted swap before anything else: with
// the manifest and NNN.log.cleaned it undoes (removes the new files), with
// the manifest otherwise it deletes what remains of the replaced segments
// and renames the .swap files; stray .cleaned and .swap files go. A kill at
// any step thus leaves either the old segments or the new one
// (CleanOptions.StepHook is called at each of CleanSteps, for tests that
// SIGKILL the process there). In memory,
// the replaced segments stop opening their files before any rename (Views
// taken before keep their descriptors and bytes) and the truncation
// generation is odd during the swap, so a Read that fails on a replaced
// segment waits and retries on the new list. TruncateTo moves the
// checkpoint back; retention or a truncation during a cleaning makes its
// swap a no-op.
//
// # Transactions
//
// A transactional batch (attribute bit 4, with a producer id) opens its
// producer's transaction at its base offset unless one is ongoing; while
// it is, a non-transactional batch of the same producer epoch is refused
// (ErrInvalidTxnState). Control batches (bit 5) come only from
// AppendMarker, Append refuses them (ErrInvalidRecord): one record, key
// version int16 0 | type int16 (ABORT 0, COMMIT 1), value version int16 0 |
// coordinatorEpoch int32 (Kafka's EndTransactionMarker), base sequence -1.
// A marker ends the producer's transaction (an empty one when none is
// ongoing, as in Kafka); an older producer epoch is refused
// (ErrInvalidProducerEpoch), and so is a coordinator epoch older than the
// producer's last marker's (ErrTransactionCoordinatorFenced). Producers
// with an ongoing transaction never expire.
//
// LastStableOffset(hw) is Kafka's LSO: the first offset of the oldest
// transaction that is ongoing or whose marker is not below hw (Kafka's
// unreplicated transactions: a marker only the leader has does not end a
// transaction for read_committed readers, since a new leader may lack
// it), or hw when lower or there is none; completed transactions below
// the hw passed are forgotten, so hw must be the high watermark. An ABORT adds (producer,
// first offset, marker offset, LSO after it) to the aborted-transaction
// index; AbortedTransactions(from, upper) returns the entries overlapping
// [from, upper), as Kafka's collectAbortedTxns, from memory. Each segment
// holding ABORT markers has NNN.txnindex, Kafka's format and name
// (txnindex.go), written with the other index files when the segment is
// sealed and at Close, and read at Open; Kafka 2.8's DumpLogSegments reads
// it. Producer snapshots (version 3) carry each producer's ongoing
// transaction and last coordinator epoch, and the producer replay of Open
// and TruncateTo (from the newest snapshot, or from the log start when
// there is none, as Kafka's) completes transactions and
// rebuilds the index of the replayed segments, rewriting their files:
// truncation rolls both back, retention and DeleteRecordsBefore delete a
// segment's .txnindex with it. Snapshots are written in roll order after
// the rolled segment's .txnindex, so the files hold every entry below the
// snapshot recovery starts from. Producers lists the producers remembered
// (DescribeProducers).
//
// The cleaner (cleaner_txn.go) never cleans at or past the first unstable
// offset; it drops the batches of aborted transactions whole and leaves
// their keys out of the offset map; it drops a marker once a pass finds no
// data of its transaction left and the segment is older than
// DeleteRetention (Kafka's rule for markers and tombstones), an ABORT's
// index entry with it. The cleaned group's .txnindex goes through the swap
// with its other files (an empty one is removed after).
//
// # Concurrency
//
// A Log is safe for concurrent use. Appends (Append, AppendReplica), rolls,
// retention, truncations and Close are serialized; Read, ReadBelow,
// StartOffset, EndOffset, OffsetForTimestamp, LatestEpoch and
// EndOffsetForEpoch run concurrently with them and only see fully written
// batches. EndOffsetForEpoch reads the epoch cache and the end offset as one
// state. A View holds a reference to its segment: a segment deleted by
// retention or a truncation (or a Log closed) stays readable through
// Views taken before, until they are released. A View of the segment that
// TruncateTo cut in place reads its bytes below the cut unchanged and fails
// (Bytes, WriteTo and SendTo return an error, possibly after sending part
// of it) for bytes past the cut; since new batches never go into a cut
// segment, a View never returns bytes written after it was taken. Reads
// that begin after TruncateTo returns never see dropped bytes; a Read that
// fails because a truncation ran under it is retried internally.
// Different Logs share nothing.
package partlog
