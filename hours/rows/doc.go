// Package rows reads the records of the loader's data files, whichever
// format package hours says a file is in: the loader's Avro container files
// and the compaction's Parquet files. A reader that lists an hour with
// hours.HourData (or a topic with hours.TopicData) and reads each file with
// Read sees every record of the hour once, before, during and after its
// compaction.
//
// # Plain values
//
// Both formats yield the same plain value for the same record, directed by
// the file's own schema (the Avro writer schema in the container header, the
// Parquet schema in the footer, as package compact mapped it):
//
//	null                                 -> nil
//	boolean, int, long, float, double    -> bool, int32, int64, float32, float64
//	string, enum                         -> string
//	bytes, fixed                         -> []byte
//	record, map                          -> map[string]any
//	array                                -> []any
//	union                                -> the value of its branch (nil for null)
//	timestamp-millis/-micros, date       -> time.Time (UTC)
//	time-millis/-micros                  -> time.Duration
//	decimal                              -> *big.Rat
//
// A Parquet group whose fields are all member0, member1, ... is read as a
// union (package compact writes multi-branch unions so, as parquet-avro
// does).
//
// Functions here only read; they are safe for concurrent use.
package rows
