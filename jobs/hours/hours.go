package hours

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"time"

	"github.com/tributary/tributary/internal/filesys"
)

// Names inside an hour directory.
const (
	// Marker is the compaction manifest whose presence means "compacted".
	Marker = "_compacted"
	// MarkerTmp is the manifest being written, before its rename to Marker.
	MarkerTmp = "_compacted.tmp"
	// TmpDir holds Parquet files being written.
	TmpDir = "_compact_tmp"
)

// ManifestVersion is the format version of the _compacted manifest. Frozen.
const ManifestVersion = 1

// Manifest is the content of an hour's _compacted marker.
type Manifest struct {
	Version     int       `json:"version"`
	CompactedAt time.Time `json:"compacted_at"`
	Inputs      []File    `json:"inputs"`
	Outputs     []File    `json:"outputs"`
}

// File is one input or output of a compaction.
type File struct {
	Name     string `json:"name"`
	Size     int64  `json:"size"`
	Records  int64  `json:"records"`
	SchemaID string `json:"schema_id,omitempty"`
}

// Hour is one hour directory of one topic.
type Hour struct {
	Topic string
	Start time.Time // UTC
	Dir   string
}

// End is the first instant after the hour.
func (h Hour) End() time.Time { return h.Start.Add(time.Hour) }

func (h Hour) String() string { return h.Topic + "/" + h.Start.Format("2006/01/02/15") }

// IsData reports whether a directory entry name can be data (not "_" or ".").
func IsData(name string) bool { return name != "" && name[0] != '_' && name[0] != '.' }

// Topics lists the topic directories under base.
func Topics(fsys filesys.FS, base string) ([]string, error) {
	list, err := fsys.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, fi := range list {
		if fi.IsDir() && IsData(fi.Name()) {
			out = append(out, fi.Name())
		}
	}
	return out, nil
}

// List returns the hours of topic, oldest first. Directories that do not
// parse as yyyy/MM/dd/HH are skipped.
func List(fsys filesys.FS, base, topic string) ([]Hour, error) {
	var out []Hour
	var walk func(dir string, parts []int) error
	walk = func(dir string, parts []int) error {
		list, err := fsys.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		widths := []int{4, 2, 2, 2}
		for _, fi := range list {
			if !fi.IsDir() || !IsData(fi.Name()) || len(fi.Name()) != widths[len(parts)] {
				continue
			}
			n, err := strconv.Atoi(fi.Name())
			if err != nil {
				continue
			}
			p := append(append([]int(nil), parts...), n)
			sub := path.Join(dir, fi.Name())
			if len(p) < 4 {
				if err := walk(sub, p); err != nil {
					return err
				}
				continue
			}
			start := time.Date(p[0], time.Month(p[1]), p[2], p[3], 0, 0, 0, time.UTC)
			if start.Year() != p[0] || int(start.Month()) != p[1] || start.Day() != p[2] || start.Hour() != p[3] {
				continue
			}
			out = append(out, Hour{Topic: topic, Start: start, Dir: sub})
		}
		return nil
	}
	if err := walk(path.Join(base, topic), nil); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out, nil
}

// Dir returns the directory of topic's hour containing t.
func Dir(base, topic string, t time.Time) string {
	return path.Join(base, topic, t.UTC().Format("2006/01/02/15"))
}

// ReadManifest reads an hour's _compacted marker; nil if there is none.
func ReadManifest(fsys filesys.FS, dir string) (*Manifest, error) {
	b, err := filesys.ReadFile(fsys, path.Join(dir, Marker))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptManifest, path.Join(dir, Marker), err)
	}
	if m.Version != ManifestVersion {
		return nil, fmt.Errorf("%w: %s: version %d, this reader knows %d", ErrCorruptManifest, path.Join(dir, Marker), m.Version, ManifestVersion)
	}
	return &m, nil
}

// Data is one data file of an hour, as the reader rule selects it.
type Data struct {
	Hour    Hour
	Name    string
	Format  Format
	Size    int64
	ModTime time.Time
}

// Path is the file's path in the file system.
func (d Data) Path() string { return path.Join(d.Hour.Dir, d.Name) }

// HourData applies the reader rule to an hour and returns its data files,
// sorted by name.
func HourData(fsys filesys.FS, h Hour) ([]Data, error) {
	m, err := ReadManifest(fsys, h.Dir)
	if err != nil {
		return nil, err
	}
	list, err := fsys.ReadDir(h.Dir)
	if err != nil {
		return nil, err
	}
	files := map[string]fs.FileInfo{}
	for _, fi := range list {
		if !fi.IsDir() && IsData(fi.Name()) {
			files[fi.Name()] = fi
		}
	}
	var out []Data
	add := func(fi fs.FileInfo, f Format) {
		out = append(out, Data{Hour: h, Name: fi.Name(), Format: f, Size: fi.Size(), ModTime: fi.ModTime()})
	}
	inputs := map[string]bool{}
	if m != nil {
		for _, f := range m.Inputs {
			inputs[f.Name] = true
		}
		for _, f := range m.Outputs {
			fi, ok := files[f.Name]
			if !ok {
				return nil, fmt.Errorf("%w: %s names output %s, which is not there: %w",
					ErrCorruptManifest, path.Join(h.Dir, Marker), f.Name, fs.ErrNotExist)
			}
			add(fi, Parquet)
		}
	}
	// Without a marker any Parquet file is a staged compaction output
	// (its name is a CompactedFile, never a LoaderFile), so it is left out.
	for name, fi := range files {
		if lf, err := ParseLoaderFile(name); err == nil && !inputs[name] {
			add(fi, lf.Format)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// TopicData returns the data files of every hour of topic, oldest hour
// first and by name within an hour.
func TopicData(fsys filesys.FS, base, topic string) ([]Data, error) {
	list, err := List(fsys, base, topic)
	if err != nil {
		return nil, err
	}
	var out []Data
	for _, h := range list {
		d, err := HourData(fsys, h)
		if err != nil {
			return nil, fmt.Errorf("hours: %s: %w", h, err)
		}
		out = append(out, d...)
	}
	return out, nil
}

// DataFiles applies the reader rule to an hour directory and returns the
// names (not paths) of its data files, sorted.
func DataFiles(fsys filesys.FS, dir string) ([]string, error) {
	d, err := HourData(fsys, Hour{Dir: dir})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(d))
	for i, f := range d {
		out[i] = f.Name
	}
	return out, nil
}
