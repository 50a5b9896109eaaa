package compact

import (
	"context"
	"time"
)

// This file is the contract of package jobs/tables (the table catalog,
// built on another branch): when that package is merged, delete this file
// and use tables.Partition and tables.Catalog in its place.

// Partition is one published time partition of a topic, as the files say
// (the jobs/hours rule).
type Partition struct {
	Topic    string
	Start    time.Time     // UTC, a multiple of Duration since the epoch
	Duration time.Duration // partition.duration.ms
	Location string        // the directory a reader lists: every data file in it, only data, one format
	Format   string        // "avro" or "parquet"
	SchemaID int           // the registry id whose schema the files were written with (latest for the hour)
}

// Catalog publishes partitions to a table catalog. Sync makes the topic's
// table hold exactly want (add missing, alter changed location/format,
// drop absent); it is idempotent, so the job that crashed at any step
// converges by calling it again with the truth from the files.
type Catalog interface {
	Sync(ctx context.Context, topic string, want []Partition) error
}
