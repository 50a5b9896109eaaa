package loader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/filesys"
)

// ManifestVersion is the format version of manifests this package writes.
// Frozen: a reader refuses other versions.
const ManifestVersion = 1

// Manifest is one commit of one partition of one job: the write-ahead
// record of the data files it moves into place and the offsets it
// commits. Its rename to manifests/<seq>.json is the commit point. The
// JSON layout is frozen (version 1).
type Manifest struct {
	Version   int    `json:"version"`
	Job       string `json:"job"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Seq numbers the partition's commits from 1.
	Seq int64 `json:"seq"`
	// Run identifies the process run that wrote it.
	Run         string    `json:"run"`
	CommittedAt time.Time `json:"committed_at"`
	// FirstOffset..NextOffset-1 is the range this commit consumed; the
	// next commit starts at NextOffset.
	FirstOffset int64 `json:"first_offset"`
	NextOffset  int64 `json:"next_offset"`
	// MaxTimestampMs is the largest record timestamp committed so far for
	// the partition (carried from commit to commit), 0 if none.
	MaxTimestampMs int64 `json:"max_timestamp_ms"`
	// WatermarkMs is what CommittedThrough reports for the partition: the
	// larger of MaxTimestampMs and, if the commit reached the end offset the
	// run saw at its start, the time that end offset was read.
	WatermarkMs int64 `json:"watermark_ms"`
	// Origins holds the mirror de-duplication high-water marks:
	// "<source>/<source partition>" -> the largest source offset landed.
	Origins map[string]int64 `json:"origins,omitempty"`
	// OriginGaps holds, per key of Origins, the source offsets below the
	// mark that have not landed (ascending, at most maxOriginGaps): a
	// record whose origin is in a gap is its first copy, not a duplicate
	// (dedup.go). Added to version 1 without a version change: a reader
	// that ignores it drops such a record as before.
	OriginGaps map[string][]OffsetRange `json:"origin_gaps,omitempty"`
	// Moves are the renames from the run's temporary directory into the
	// output, applied after the commit point (idempotently).
	Moves []Move `json:"moves"`
	// Counts of this commit.
	Records    int64 `json:"records"`
	Bytes      int64 `json:"bytes"`
	Errors     int64 `json:"errors"`
	Duplicates int64 `json:"duplicates"`
	// Audit holds the audit events of this commit and any of earlier
	// commits not confirmed published (IDs are deterministic, so a
	// re-publish never counts twice).
	Audit []AuditEvent `json:"audit,omitempty"`
}

// OffsetRange is the source offsets First..Last, both included.
type OffsetRange struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
}

// Move is one rename of a commit.
type Move struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// AuditEvent is an audit.Event as a manifest records it.
type AuditEvent struct {
	ID            string `json:"id"`
	Topic         string `json:"topic"`
	WindowStartMs int64  `json:"window_start_ms"`
	WindowMs      int64  `json:"window_ms"`
	Count         int64  `json:"count"`
	Bytes         int64  `json:"bytes"`
	Errors        int64  `json:"errors"`
}

// Directory layout under the output base, all of it not data ("_" prefix).
const (
	// StateDir holds every job's state: <base>/_loader/<job>/...
	StateDir = "_loader"
	// ErrorsDir holds bad records: <base>/_errors/<topic>/...
	ErrorsDir = "_errors"
)

func jobDir(base, job string) string { return path.Join(base, StateDir, job) }

func partitionDir(base, job, topic string, p int32) string {
	return path.Join(jobDir(base, job), topic, strconv.Itoa(int(p)))
}

func manifestsDir(base, job, topic string, p int32) string {
	return path.Join(partitionDir(base, job, topic, p), "manifests")
}

func tmpDir(base, job, topic string, p int32) string {
	return path.Join(partitionDir(base, job, topic, p), "tmp")
}

func manifestName(seq int64) string { return fmt.Sprintf("%020d.json", seq) }

func publishedName(seq int64) string { return fmt.Sprintf("%020d.published", seq) }

// parseSeq returns the sequence number of a manifest file name.
func parseSeq(name string) (int64, bool) {
	s, ok := strings.CutSuffix(name, ".json")
	if !ok || len(s) != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

// latestManifest reads the newest committed manifest of a partition; nil
// (and no error) if the partition has none.
func latestManifest(fsys filesys.FS, base, job, topic string, p int32) (*Manifest, []int64, error) {
	dir := manifestsDir(base, job, topic, p)
	list, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var seqs []int64
	for _, fi := range list {
		if n, ok := parseSeq(fi.Name()); ok {
			seqs = append(seqs, n)
		}
	}
	if len(seqs) == 0 {
		return nil, nil, nil
	}
	slices.Sort(seqs)
	m, err := readManifest(fsys, path.Join(dir, manifestName(seqs[len(seqs)-1])))
	if err != nil {
		return nil, nil, err
	}
	return m, seqs, nil
}

func readManifest(fsys filesys.FS, name string) (*Manifest, error) {
	b, err := filesys.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", name, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptManifest, name, err)
	}
	if m.Version != ManifestVersion {
		return nil, fmt.Errorf("%w: %s: version %d, this loader reads %d", ErrCorruptManifest, name, m.Version, ManifestVersion)
	}
	return &m, nil
}

// PartitionState is what the newest commit of one partition says.
type PartitionState struct {
	Topic      string
	Partition  int32
	Seq        int64
	NextOffset int64
	// MaxTimestamp is the largest record timestamp committed (zero if none).
	MaxTimestamp time.Time
	// Watermark is the partition's share of CommittedThrough.
	Watermark time.Time
}

// partitionsFile, in a topic's state directory, records how many
// partitions of the topic the job loads (JSON {"version": 1,
// "partitions": N}), so that a partition without any commit yet holds
// CommittedThrough back.
const partitionsFile = "_partitions"

// recordPartitions writes the topic's partition count if it grew.
func recordPartitions(fsys filesys.FS, base, job, topic string, n int32, tmpSuffix string) error {
	name := path.Join(jobDir(base, job), topic, partitionsFile)
	if have, err := readPartitions(fsys, name); err != nil || have >= n {
		return err
	}
	b, _ := json.Marshal(map[string]int{"version": 1, "partitions": int(n)})
	tmp := name + "." + tmpSuffix + ".tmp"
	if err := filesys.WriteFile(fsys, tmp, b); err != nil {
		return err
	}
	return fsys.Rename(tmp, name)
}

func readPartitions(fsys filesys.FS, name string) (int32, error) {
	b, err := filesys.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var v struct {
		Partitions int32 `json:"partitions"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v.Partitions, nil
}

// Jobs lists, sorted, the loader jobs that keep state under base (a job's
// first run records it before loading anything): what a name given to
// CommittedThrough is checked against, since an unknown job has committed
// nothing and reads as the zero time.
func Jobs(fsys filesys.FS, base string) ([]string, error) {
	dir := path.Join(base, StateDir)
	list, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var out []string
	for _, fi := range list {
		if fi.IsDir() {
			out = append(out, fi.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

// States lists the committed state of every partition of a job; a
// partition the job loads that has no commit yet has a zero state.
func States(ctx context.Context, fsys filesys.FS, base, job string) ([]PartitionState, error) {
	dir := jobDir(base, job)
	topics, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var out []PartitionState
	for _, td := range topics {
		if !td.IsDir() {
			continue
		}
		parts, err := fsys.ReadDir(path.Join(dir, td.Name()))
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", path.Join(dir, td.Name()), err)
		}
		n, err := readPartitions(fsys, path.Join(dir, td.Name(), partitionsFile))
		if err != nil {
			return nil, err
		}
		committed := map[int32]bool{}
		for _, pd := range parts {
			p, err := strconv.ParseInt(pd.Name(), 10, 32)
			if err != nil || !pd.IsDir() {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			m, seqs, err := latestManifest(fsys, base, job, td.Name(), int32(p))
			if err != nil {
				return nil, err
			}
			if m == nil {
				continue
			}
			wm, err := movedWatermark(fsys, base, job, m, seqs)
			if err != nil {
				return nil, err
			}
			st := PartitionState{Topic: m.Topic, Partition: m.Partition, Seq: m.Seq, NextOffset: m.NextOffset,
				Watermark: time.UnixMilli(wm).UTC()}
			if m.MaxTimestampMs > 0 {
				st.MaxTimestamp = time.UnixMilli(m.MaxTimestampMs).UTC()
			}
			out = append(out, st)
			committed[m.Partition] = true
		}
		for p := int32(0); p < n; p++ {
			if !committed[p] {
				out = append(out, PartitionState{Topic: td.Name(), Partition: p})
			}
		}
	}
	return out, nil
}

// movedWatermark is the watermark of the newest manifest m whose files
// are in place: m's own once its moves are done (a move's source is gone),
// else the one before it (whose moves were done before m was committed),
// or 0. A crash between the commit point and the moves leaves m's files in
// the temporary directory until the next run recovers them, and an hour
// must not be ready without them.
func movedWatermark(fsys filesys.FS, base, job string, m *Manifest, seqs []int64) (int64, error) {
	pending := false
	for _, mv := range m.Moves {
		ok, err := filesys.Exists(fsys, mv.From)
		if err != nil {
			return 0, err
		}
		if ok {
			pending = true
			break
		}
	}
	if !pending {
		return m.WatermarkMs, nil
	}
	for i := len(seqs) - 1; i >= 0; i-- {
		if seqs[i] < m.Seq {
			prev, err := readManifest(fsys, path.Join(manifestsDir(base, job, m.Topic, m.Partition), manifestName(seqs[i])))
			if err != nil {
				return 0, err
			}
			return prev.WatermarkMs, nil
		}
	}
	return 0, nil
}

// CommittedThrough returns, for compaction's "closed hour" rule (a
// partition the job loads without any commit yet counts as the zero time), the
// smallest over the job's partitions of the partition's watermark: the
// largest record timestamp committed, or the time the partition was last
// found fully loaded, whichever is later. An hour H is closed when
// CommittedThrough >= end of H + a delay for late records. It is the zero
// time if the job has committed nothing.
func CommittedThrough(ctx context.Context, fsys filesys.FS, base, job string) (time.Time, error) {
	states, err := States(ctx, fsys, base, job)
	if err != nil {
		return time.Time{}, err
	}
	var min time.Time
	for i, st := range states {
		if i == 0 || st.Watermark.Before(min) {
			min = st.Watermark
		}
	}
	return min, nil
}
