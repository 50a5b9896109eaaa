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

// PartitioningFile is the topic directory's marker of a layout other than
// the default hourly one: <base>/<topic>/_partitioning, JSON
// {"version": 1, "partition_duration_ms": N}, or version 2 when a
// path.format or Kafka columns are set (adding "path_format",
// "store_kafka_keys", "store_kafka_headers", "store_kafka_coordinates"),
// written by the loader before its first file of the topic. Without it the
// topic is hourly in the default layout, values only.
const PartitioningFile = "_partitioning"

// partitioning is the content of PartitioningFile. Frozen, versions 1 and 2.
type partitioning struct {
	Version     int    `json:"version"`
	DurationMs  int64  `json:"partition_duration_ms"`
	PathFormat  string `json:"path_format,omitempty"`
	Keys        bool   `json:"store_kafka_keys,omitempty"`
	Headers     bool   `json:"store_kafka_headers,omitempty"`
	Coordinates bool   `json:"store_kafka_coordinates,omitempty"`
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

// EncodePartitioning is the PartitioningFile content for duration d (the
// default path layout, values only).
func EncodePartitioning(d time.Duration) []byte { return EncodeLayout(DefaultLayout(d)) }

// EncodeLayout is the PartitioningFile content for a layout: version 1
// when it only sets a duration, else version 2.
func EncodeLayout(l Layout) []byte {
	p := partitioning{Version: 1, DurationMs: l.Duration.Milliseconds()}
	if l.PathFormat != "" || l.Stored != (Stored{}) {
		p.Version, p.PathFormat = 2, l.PathFormat
		p.Keys, p.Headers, p.Coordinates = l.Stored.Keys, l.Stored.Headers, l.Stored.Coordinates
	}
	b, _ := json.Marshal(p)
	return b
}

// Partitioning returns topic's partition duration: what its
// PartitioningFile says, else an hour.
func Partitioning(fsys filesys.FS, base, topic string) (time.Duration, error) {
	l, err := ReadLayout(fsys, base, topic)
	return l.Duration, err
}

// ReadLayout returns topic's layout: what its PartitioningFile says, else
// the default hourly one.
func ReadLayout(fsys filesys.FS, base, topic string) (Layout, error) {
	name := path.Join(base, topic, PartitioningFile)
	b, err := filesys.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultLayout(time.Hour), nil
	}
	if err != nil {
		return Layout{}, err
	}
	var p partitioning
	if err := json.Unmarshal(b, &p); err != nil || (p.Version != 1 && p.Version != 2) {
		return Layout{}, fmt.Errorf("%w: %s: %q", ErrCorruptLayout, name, b)
	}
	d := time.Duration(p.DurationMs) * time.Millisecond
	l, err := NewLayout(d, p.PathFormat)
	if err != nil {
		return Layout{}, fmt.Errorf("%w: %s: %v", ErrCorruptLayout, name, err)
	}
	l.Stored = Stored{Keys: p.Keys, Headers: p.Headers, Coordinates: p.Coordinates}
	return l, nil
}
