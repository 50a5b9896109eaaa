// Package hours knows the loader's output layout and the rule by which a
// reader decides which files of an hour are its data, before, during and
// after compaction.
//
// Layout (written by the loader, frozen):
//
//	<base>/<topic>/<yyyy>/<MM>/<dd>/<HH>/<topic>+<partition>+<firstOffset>+<lastOffset>+s<schemaID>.avro
//
// by the records' timestamps in UTC. Names starting with "_" or "." are not
// data (<base>/_loader, <base>/_errors, an hour's _compact_tmp, ...).
//
// Compaction (package compact) turns an hour's Avro files into Parquet and
// leaves a permanent marker, the hour's manifest "_compacted" (JSON, format
// version 1, frozen), written by an atomic rename. The reader rule, which
// every reader of the layout must follow and DataFiles implements:
//
//   - An hour without "_compacted": its data are its *.avro files. Any
//     *.parquet file there is a staged, uncommitted compaction output and is
//     ignored.
//   - An hour with "_compacted": its data are the *.parquet files the
//     manifest names as outputs, plus any *.avro file the manifest does not
//     name as an input (a late file written after compaction). The inputs
//     still present are being deleted and are ignored.
//
// So a reader sees either the Avro files or the Parquet files of an hour,
// never both and never neither, whatever step a compaction crashed at.
//
// Functions here only read; they are safe for concurrent use.
package hours
