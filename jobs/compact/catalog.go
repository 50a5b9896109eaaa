package compact

import (
	"context"
	"time"

	"github.com/tributary/tributary/hours"
)

// The contract between compaction (and retention) and a table catalog:
// package jobs/tables implements Catalog in a Hive Metastore (its
// Partition and Catalog are these types); FileCatalog keeps one in a local
// JSON file.

// Partition is one published time partition of a topic, as the files say
// (the hours rule).
type Partition struct {
	Topic    string
	Start    time.Time     // UTC, a multiple of Duration since the epoch
	Duration time.Duration // partition.duration.ms
	Location string        // the directory a reader lists: every data file in it, only data, one format
	Format   string        // "avro" or "parquet"
	SchemaID int           // the registry id whose schema the files were written with (latest for the hour)
	// Columns and Values are the partition spec of a Hive-style
	// path.format (hours.Layout: e.g. dt and hr, and their values); nil
	// for the default layout, whose table has the one column "hour".
	Columns []string `json:",omitempty"`
	Values  []string `json:",omitempty"`
	// Stored are the Kafka columns the files hold after the value's fields.
	Stored hours.Stored `json:",omitzero"`
}

// Catalog publishes partitions to a table catalog. Sync makes the topic's
// table hold exactly want (add missing, alter changed location/format,
// drop absent); it is idempotent, so the job that crashed at any step
// converges by calling it again with the truth from the files.
type Catalog interface {
	Sync(ctx context.Context, topic string, want []Partition) error
}
