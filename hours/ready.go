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

// Readiness markers, Hadoop's convention: a partition directory holding
// _SUCCESS is complete. Compaction copies it into each generation
// directory it writes.
const (
	SuccessMarker = "_SUCCESS"
	SuccessTmp    = "_SUCCESS.tmp"
)

// SuccessVersion is the format version of the _SUCCESS content. Frozen.
const SuccessVersion = 1

// Partition states, as `tributary loader hours` and the audit service show them.
const (
	// StateLoading: the loader job has not committed past the end plus the delay.
	StateLoading = "loading"
	// StateWaiting: loaded, but the audit does not prove it complete yet.
	StateWaiting = "waiting-for-audit"
	// StateReady: _SUCCESS, the audit proved it complete (or no audit is configured).
	StateReady = "ready"
	// StateReadyIncomplete: _SUCCESS written at completeness.timeout with a shortfall.
	StateReadyIncomplete = "ready-incomplete"
	// StateCompacted: ready and compacted into Parquet.
	StateCompacted = "compacted"
)

// Bases of readiness (Success.Basis).
const (
	BasisAudit     = "audit"     // every overlapping audit window met the threshold
	BasisTimeout   = "timeout"   // completeness.timeout passed first
	BasisUnaudited = "unaudited" // no audit service configured: closed is ready
)

// AuditWindow is one audit window's producer and loader counts for a topic.
type AuditWindow struct {
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Producer int64     `json:"producer"`
	Loader   int64     `json:"loader"`
}

// Success is the content of a partition's _SUCCESS marker (JSON).
type Success struct {
	Version   int       `json:"version"`
	Topic     string    `json:"topic"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	State     string    `json:"state"` // StateReady or StateReadyIncomplete
	Basis     string    `json:"basis"`
	Threshold float64   `json:"threshold"`
	// Producer and Loader sum the audit windows overlapping the partition
	// (windows longer than the partition count records outside it too).
	Producer int64 `json:"producer"`
	Loader   int64 `json:"loader"`
	// Shortfall sums producer - loader over the windows where it is positive.
	Shortfall     int64         `json:"shortfall"`
	Windows       []AuditWindow `json:"windows,omitempty"`
	ClosedThrough time.Time     `json:"closed_through"`
	ReadyAt       time.Time     `json:"ready_at"`
}

// ReadSuccess reads a partition's _SUCCESS marker; nil if there is none.
func ReadSuccess(fsys filesys.FS, dir string) (*Success, error) {
	name := path.Join(dir, SuccessMarker)
	b, err := filesys.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s Success
	if err := json.Unmarshal(b, &s); err != nil || s.Version != SuccessVersion {
		return nil, fmt.Errorf("%w: %s: %q", ErrCorruptLayout, name, b)
	}
	return &s, nil
}

// Status is one partition's state.
type Status struct {
	Hour     Hour      `json:"-"`
	Topic    string    `json:"topic"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	State    string    `json:"state"`
	Success  *Success  `json:"success,omitempty"`
	Manifest *Manifest `json:"-"`
	// Location is the directory a table reader lists for the partition
	// (the hour directory, or its generation directory once compacted);
	// Format is its files' format.
	Location string `json:"location"`
	Format   Format `json:"format"`
	Files    int    `json:"files"`
	Bytes    int64  `json:"bytes"`
	// SchemaID is the largest writer schema id among the location's files.
	SchemaID int `json:"schema_id"`
	// LateFiles are loader files that came after the compaction (in the
	// hour directory, waiting for recompaction); LateBytes their size.
	LateFiles int   `json:"late_files,omitempty"`
	LateBytes int64 `json:"late_bytes,omitempty"`
}

// Ready reports whether the partition has its _SUCCESS marker.
func (s Status) Ready() bool { return s.Success != nil }

// StatusOf returns a partition's state. closed is how far the loader job
// has committed (loader.CommittedThrough); delay is the wait past the end.
func StatusOf(fsys filesys.FS, h Hour, closed time.Time, delay time.Duration) (Status, error) {
	st := Status{Hour: h, Topic: h.Topic, Start: h.Start, End: h.End(), Location: h.Dir, Format: Avro}
	var err error
	if st.Success, err = ReadSuccess(fsys, h.Dir); err != nil {
		return st, err
	}
	if st.Manifest, err = ReadManifest(fsys, h.Dir); err != nil {
		return st, err
	}
	data, err := HourData(fsys, h)
	if err != nil {
		return st, err
	}
	if m := st.Manifest; m != nil {
		st.Location, st.Format = m.OutputDir(h), Parquet
	}
	for _, d := range data {
		if d.Path() != path.Join(st.Location, d.Name) {
			st.LateFiles++
			st.LateBytes += d.Size
			continue
		}
		st.Files++
		st.Bytes += d.Size
		st.SchemaID = max(st.SchemaID, schemaIDOf(d.Name))
	}
	switch {
	case st.Manifest != nil:
		st.State = StateCompacted
	case st.Success != nil:
		st.State = st.Success.State
	case h.End().Add(delay).After(closed):
		st.State = StateLoading
	default:
		st.State = StateWaiting
	}
	return st, nil
}

// Statuses returns the state of every partition of topic, oldest first.
func Statuses(fsys filesys.FS, base, topic string, closed time.Time, delay time.Duration) ([]Status, error) {
	list, err := List(fsys, base, topic)
	if err != nil {
		return nil, err
	}
	out := make([]Status, 0, len(list))
	for _, h := range list {
		st, err := StatusOf(fsys, h, closed, delay)
		if err != nil {
			return nil, fmt.Errorf("hours: %s: %w", h, err)
		}
		out = append(out, st)
	}
	return out, nil
}

// Published returns, from the files, the partitions of topic a table
// catalog holds: every ready partition (with _SUCCESS) at its location.
// A partition compacted by the old layout (manifest version 1: Parquet
// beside Avro) is left out until compaction moves it into a generation
// directory, so no table location is ever mixed.
func Published(fsys filesys.FS, base, topic string) ([]Status, error) {
	all, err := Statuses(fsys, base, topic, time.Time{}, 0)
	if err != nil {
		return nil, err
	}
	var out []Status
	for _, st := range all {
		if st.Success != nil && (st.Manifest == nil || st.Manifest.Version != ManifestV1) {
			out = append(out, st)
		}
	}
	return out, nil
}

// schemaIDOf reads the schema id from a loader or compaction file name.
func schemaIDOf(name string) int {
	if lf, err := ParseLoaderFile(name); err == nil {
		return int(lf.SchemaID)
	}
	if cf, err := ParseCompactedFile(name); err == nil {
		return int(cf.SchemaID)
	}
	return 0
}
