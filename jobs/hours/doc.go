// Package hours owns the loader's output layout: it names, parses and lists
// the data files for everyone (the loader, compaction, retention and every
// reader; nobody else formats or parses these names), and it is the rule by
// which a reader decides which files of an hour are its data, before,
// during and after compaction. Package hours/rows reads the files.
//
// Layout (written by the loader, frozen):
//
//	<base>/<topic>/<yyyy>/<MM>/<dd>/<HH>/<topic>+<partition>+<firstOffset>+<lastOffset>+s<schemaID>.<format>
//
// (LoaderFile; Dir gives the hour directory) by the records' timestamps in
// UTC; the loader's only format is "avro". Compaction writes
// <topic>+s<schemaID>+<nnn>.parquet (CompactedFile). Names starting with
// "_" or "." are not data (<base>/_loader, <base>/_errors, an hour's
// _compact_tmp, ...).
//
// Compaction (package compact) turns an hour's Avro files into Parquet and
// leaves a permanent marker, the hour's manifest "_compacted" (JSON, format
// version 1, frozen), written by an atomic rename. The reader rule, which
// every reader of the layout must follow:
//
//   - An hour without "_compacted": its data are its loader files (names
//     that parse as LoaderFile). A compaction output there (a
//     CompactedFile name) is staged, uncommitted, and is ignored.
//   - An hour with "_compacted": its data are the Parquet files the
//     manifest names as outputs, plus any loader file the manifest does not
//     name as an input (a late file written after compaction). The inputs
//     still present are being deleted and are ignored.
//
// So a reader sees either the Avro files or the Parquet files of an hour,
// never both and never neither, whatever step a compaction crashed at.
// HourData, TopicData and DataFiles implement the rule.
//
// Functions here only read; they are safe for concurrent use.
package hours
