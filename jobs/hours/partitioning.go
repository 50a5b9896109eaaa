package hours

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"time"

	"github.com/tributary/tributary/internal/filesys"
)

// PartitioningFile is the topic directory's marker of a partition
// duration other than the hour: <base>/<topic>/_partitioning, JSON
// {"version": 1, "partition_duration_ms": N}, written by the loader before
// its first file of the topic. Without it the topic is hourly.
const PartitioningFile = "_partitioning"

// partitioning is the content of PartitioningFile. Frozen, version 1.
type partitioning struct {
	Version    int   `json:"version"`
	DurationMs int64 `json:"partition_duration_ms"`
}

// ValidDuration checks a partition.duration.ms: a whole number of minutes
// that divides an hour (1m, 5m, 10m, 15m, 30m, ...) or a whole number of
// hours that divides a day (1h, 2h, 3h, 4h, 6h, 8h, 12h, 24h), so that
// partitions start at the same instants whatever the clock.
func ValidDuration(d time.Duration) error {
	switch {
	case d <= 0 || d%time.Minute != 0:
		return fmt.Errorf("%v: not a positive whole number of minutes", d)
	case d < time.Hour && time.Hour%d != 0:
		return fmt.Errorf("%v: a duration under an hour must divide the hour", d)
	case d >= time.Hour && (d%time.Hour != 0 || 24*time.Hour%d != 0):
		return fmt.Errorf("%v: a duration of an hour or more must be whole hours dividing a day", d)
	}
	return nil
}

// EncodePartitioning is the PartitioningFile content for duration d.
func EncodePartitioning(d time.Duration) []byte {
	b, _ := json.Marshal(partitioning{Version: 1, DurationMs: d.Milliseconds()})
	return b
}

// Partitioning returns topic's partition duration: what its
// PartitioningFile says, else an hour.
func Partitioning(fsys filesys.FS, base, topic string) (time.Duration, error) {
	name := path.Join(base, topic, PartitioningFile)
	b, err := filesys.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return time.Hour, nil
	}
	if err != nil {
		return 0, err
	}
	var p partitioning
	if err := json.Unmarshal(b, &p); err != nil || p.Version != 1 {
		return 0, fmt.Errorf("%w: %s: %q", ErrCorruptLayout, name, b)
	}
	d := time.Duration(p.DurationMs) * time.Millisecond
	if err := ValidDuration(d); err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrCorruptLayout, name, err)
	}
	return d, nil
}
