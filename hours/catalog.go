package hours

import (
	"context"
	"time"

	"github.com/tributary/tributary/internal/filesys"
)

// The contract between the writers of a table catalog's truth (compaction
// and retention) and a table catalog: package jobs/tables implements
// Catalog in a Hive Metastore (its Partition and Catalog are these types);
// FileCatalog keeps one in a local JSON file.

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
	// path.format (Layout: e.g. dt and hr, and their values); nil for the
	// default layout, whose table has the one column "hour".
	Columns []string `json:",omitempty"`
	Values  []string `json:",omitempty"`
	// Stored are the Kafka columns the files hold after the value's fields.
	Stored Stored `json:",omitzero"`
}

// Catalog publishes partitions to a table catalog. Sync makes the topic's
// table hold exactly want (add missing, alter changed location/format,
// drop absent); it is idempotent, so the job that crashed at any step
// converges by calling it again with the truth from the files. A Catalog
// that refuses a topic until someone acts returns an error wrapping
// ErrCatalogBlocked.
type Catalog interface {
	Sync(ctx context.Context, topic string, want []Partition) error
}

// PublishedPartitions returns topic's published partitions as the files
// say (the want of a catalog sync: Published's partitions with the
// topic's Layout), leaving out the hours in skip (by directory).
func PublishedPartitions(fsys filesys.FS, base, topic string, skip map[string]bool) ([]Partition, error) {
	list, err := Published(fsys, base, topic)
	if err != nil {
		return nil, err
	}
	layout, err := ReadLayout(fsys, base, topic)
	if err != nil {
		return nil, err
	}
	out := make([]Partition, 0, len(list))
	for _, st := range list {
		if skip[st.Hour.Dir] {
			continue
		}
		out = append(out, Partition{Topic: topic, Start: st.Start, Duration: st.Hour.Len(),
			Location: st.Location, Format: string(st.Format), SchemaID: st.SchemaID,
			Columns: layout.Columns(), Values: layout.Values(st.Start), Stored: layout.Stored})
	}
	return out, nil
}

// SyncCatalog gives cat topic's published partitions as the files say,
// those in skip (hour directories about to be deleted) left out.
func SyncCatalog(ctx context.Context, cat Catalog, fsys filesys.FS, base, topic string, skip map[string]bool) error {
	want, err := PublishedPartitions(fsys, base, topic, skip)
	if err != nil {
		return err
	}
	return cat.Sync(ctx, topic, want)
}
