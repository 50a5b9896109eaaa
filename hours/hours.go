package hours

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/filesys"
)

// Names inside an hour directory.
const (
	// Marker is the compaction manifest whose presence means "compacted".
	Marker = "_compacted"
	// MarkerTmp is the manifest being written, before its rename to Marker.
	MarkerTmp = "_compacted.tmp"
	// TmpDir held Parquet files being written (format version 1); a
	// leftover one is removed by compaction's recovery.
	TmpDir = "_compact_tmp"
)

// Manifest format versions. Frozen.
const (
	// ManifestV1: the outputs are in the hour directory beside its Avro
	// files (written by older compactions; still read).
	ManifestV1 = 1
	// ManifestVersion (2) is what compaction writes: the outputs are in
	// the hour's generation directory (GenerationDir).
	ManifestVersion = 2
)

// Manifest is the content of an hour's _compacted marker.
type Manifest struct {
	Version     int       `json:"version"`
	CompactedAt time.Time `json:"compacted_at"`
	// Generation (version 2) numbers the hour's compactions from 1: the
	// outputs are in GenerationDir(hour, Generation).
	Generation int    `json:"generation,omitempty"`
	Inputs     []File `json:"inputs"`
	Outputs    []File `json:"outputs"`
}

// OutputDir is the directory holding the manifest's outputs.
func (m *Manifest) OutputDir(h Hour) string {
	if m.Version == ManifestV1 {
		return h.Dir
	}
	return GenerationDir(h, m.Generation)
}

// File is one input or output of a compaction.
type File struct {
	Name     string `json:"name"`
	Size     int64  `json:"size"`
	Records  int64  `json:"records"`
	SchemaID string `json:"schema_id,omitempty"`
}

// Hour is one time partition (by default an hour) of one topic: its
// directory, where the loader writes.
type Hour struct {
	Topic string
	Start time.Time // UTC
	// Duration is the topic's partition.duration.ms; zero means an hour.
	Duration time.Duration
	Dir      string
}

// Len is the partition's duration (an hour unless the topic says otherwise).
func (h Hour) Len() time.Duration {
	if h.Duration == 0 {
		return time.Hour
	}
	return h.Duration
}

// End is the first instant after the partition.
func (h Hour) End() time.Time { return h.Start.Add(h.Len()) }

func (h Hour) String() string { return h.Topic + "/" + h.Start.Format(dirFormat(h.Len())) }

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

// List returns the partitions of topic, oldest first, in the topic's
// layout (ReadLayout). Directories that are not canonical partition
// directories of the layout (yyyy/MM/dd/HH by default, or
// yyyy/MM/dd/HH/mm for a sub-hour duration, or the topic's path.format),
// or whose time is not a multiple of the duration, are skipped.
func List(fsys filesys.FS, base, topic string) ([]Hour, error) {
	l, err := ReadLayout(fsys, base, topic)
	if err != nil {
		return nil, err
	}
	dur := l.Duration
	if dur == time.Hour {
		dur = 0 // the default layout's Hour values stay as they were
	}
	var out []Hour
	var walk func(dir string, names []string) error
	walk = func(dir string, names []string) error {
		list, err := fsys.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, fi := range list {
			if !fi.IsDir() || !IsData(fi.Name()) {
				continue
			}
			p := append(append([]string(nil), names...), fi.Name())
			sub := path.Join(dir, fi.Name())
			if !l.levels[len(names)].parse(fi.Name(), map[byte]int{}) {
				continue
			}
			if len(p) < len(l.levels) {
				if err := walk(sub, p); err != nil {
					return err
				}
				continue
			}
			if start, ok := l.startOf(p); ok {
				out = append(out, Hour{Topic: topic, Start: start, Duration: dur, Dir: sub})
			}
		}
		return nil
	}
	if err := walk(path.Join(base, topic), nil); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out, nil
}

// Dir returns the directory of topic's hour containing t (the default,
// hourly layout).
func Dir(base, topic string, t time.Time) string { return DirFor(base, topic, t, time.Hour) }

// DirFor returns the directory of topic's partition of duration d
// containing t: <yyyy>/<MM>/<dd>/<HH> of its start, and /<mm> below that
// when d is shorter than an hour.
func DirFor(base, topic string, t time.Time, d time.Duration) string {
	return DefaultLayout(d).Dir(base, topic, t)
}

func dirFormat(d time.Duration) string {
	if d < time.Hour {
		return "2006/01/02/15/04"
	}
	return "2006/01/02/15"
}

// GenerationDir is the directory of an hour's compaction generation gen:
// the sibling <hour>.c<gen> of the hour directory (so never inside a
// location a reader lists, and not hidden by name).
func GenerationDir(h Hour, gen int) string {
	return h.Dir + ".c" + strconv.Itoa(gen)
}

// Generations lists the hour's generation directories (their numbers),
// oldest first, whether a manifest names them or not.
func Generations(fsys filesys.FS, h Hour) ([]int, error) {
	list, err := fsys.ReadDir(path.Dir(h.Dir))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, fi := range list {
		if g, ok := ParseGeneration(path.Base(h.Dir), fi.Name()); ok && fi.IsDir() {
			out = append(out, g)
		}
	}
	sort.Ints(out)
	return out, nil
}

// ParseGeneration reports whether name (a directory entry beside the hour
// directory named leaf) is one of the hour's generation directories, and
// which.
func ParseGeneration(leaf, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, leaf+".c")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n <= 0 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
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
	if m.Version != ManifestV1 && m.Version != ManifestVersion {
		return nil, fmt.Errorf("%w: %s: version %d, this reader knows %d and %d", ErrCorruptManifest, path.Join(dir, Marker), m.Version, ManifestV1, ManifestVersion)
	}
	if m.Version == ManifestVersion && m.Generation <= 0 {
		return nil, fmt.Errorf("%w: %s: version 2 without a generation", ErrCorruptManifest, path.Join(dir, Marker))
	}
	return &m, nil
}

// Data is one data file of an hour, as the reader rule selects it.
type Data struct {
	Hour Hour
	// Dir is the directory the file is in: the hour's, or its generation
	// directory for a compaction output ("" means the hour's).
	Dir     string
	Name    string
	Format  Format
	Size    int64
	ModTime time.Time
}

// Path is the file's path in the file system.
func (d Data) Path() string {
	if d.Dir != "" {
		return path.Join(d.Dir, d.Name)
	}
	return path.Join(d.Hour.Dir, d.Name)
}

// HourData applies the reader rule to an hour and returns its data files,
// sorted by name.
func HourData(fsys filesys.FS, h Hour) ([]Data, error) {
	m, err := ReadManifest(fsys, h.Dir)
	if err != nil {
		return nil, err
	}
	files, err := dataEntries(fsys, h.Dir)
	if err != nil {
		return nil, err
	}
	var out []Data
	add := func(dir string, fi fs.FileInfo, f Format) {
		out = append(out, Data{Hour: h, Dir: dir, Name: fi.Name(), Format: f, Size: fi.Size(), ModTime: fi.ModTime()})
	}
	inputs := map[string]bool{}
	if m != nil {
		for _, f := range m.Inputs {
			inputs[f.Name] = true
		}
		outDir, outFiles := h.Dir, files
		if m.Version != ManifestV1 {
			outDir = m.OutputDir(h)
			if outFiles, err = dataEntries(fsys, outDir); err != nil {
				return nil, fmt.Errorf("%w: %s: generation %d: %w", ErrCorruptManifest, path.Join(h.Dir, Marker), m.Generation, err)
			}
		}
		for _, f := range m.Outputs {
			fi, ok := outFiles[f.Name]
			if !ok {
				return nil, fmt.Errorf("%w: %s names output %s, which is not there: %w",
					ErrCorruptManifest, path.Join(h.Dir, Marker), path.Join(outDir, f.Name), fs.ErrNotExist)
			}
			add(outDir, fi, Parquet)
		}
	}
	// Without a marker any Parquet file is a staged compaction output
	// (its name is a CompactedFile, never a LoaderFile), so it is left out.
	for name, fi := range files {
		if lf, err := ParseLoaderFile(name); err == nil && !inputs[name] {
			add(h.Dir, fi, lf.Format)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path() < out[j].Path() })
	return out, nil
}

// dataEntries lists the files of dir whose names can be data.
func dataEntries(fsys filesys.FS, dir string) (map[string]fs.FileInfo, error) {
	list, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string]fs.FileInfo{}
	for _, fi := range list {
		if !fi.IsDir() && IsData(fi.Name()) {
			files[fi.Name()] = fi
		}
	}
	return files, nil
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
// names of its data files relative to dir, sorted: a loader file's name,
// and for a compaction output in the generation directory
// "../<HH>.c<N>/<name>", so that path.Join(dir, name) is its path.
func DataFiles(fsys filesys.FS, dir string) ([]string, error) {
	d, err := HourData(fsys, Hour{Dir: dir})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(d))
	for i, f := range d {
		out[i] = f.Name
		if f.Dir != "" && f.Dir != dir {
			out[i] = path.Join("..", path.Base(f.Dir), f.Name)
		}
	}
	return out, nil
}
