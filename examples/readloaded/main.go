// Command readloaded reads back what the loader wrote: every data file of
// the loader's output, Avro container files and hours compacted into
// Parquet alike, as package hours lists them (names starting with "_"
// or "." are loader state, not data, and are skipped), printing each
// record as one JSON line and a count at the end. Each file carries its
// schema, so no registry is needed.
//
//	readloaded --dir tributary-pipeline-data/data/pageviews --max 5
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/hours/rows"
	"github.com/tributary/tributary/internal/filesys"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "readloaded:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "tributary-pipeline-data/data", "the loader's output directory (or one topic's)")
	maxPrint := flag.Int("max", -1, "print at most this many records (-1: all); every record is still read")
	flag.Parse()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	files, err := dataFiles(filesys.Local(), filepath.Clean(*dir))
	if err != nil {
		return err
	}
	var records int
	for _, d := range files {
		_, err := rows.Read(filesys.Local(), d, func(rec map[string]any) error {
			if *maxPrint < 0 || records < *maxPrint {
				b, err := json.Marshal(jsonValue(rec))
				if err != nil {
					return err
				}
				out.Write(b)
				out.WriteByte('\n')
			}
			records++
			return nil
		})
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "read %d records from %d files\n", records, len(files))
	return nil
}

// dataFiles lists the data files under dir: dir is one topic's directory
// if it holds hours, else the output base with a directory per topic.
func dataFiles(fsys filesys.FS, dir string) ([]hours.Data, error) {
	if own, err := hours.List(fsys, filepath.Dir(dir), filepath.Base(dir)); err != nil {
		return nil, err
	} else if len(own) > 0 {
		return hours.TopicData(fsys, filepath.Dir(dir), filepath.Base(dir))
	}
	topics, err := hours.Topics(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []hours.Data
	for _, t := range topics {
		d, err := hours.TopicData(fsys, dir, t)
		if err != nil {
			return nil, err
		}
		out = append(out, d...)
	}
	return out, nil
}

// jsonValue turns plain values (package rows) into JSON-friendly ones: a
// timestamp becomes its RFC 3339 text.
func jsonValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, inner := range x {
			m[k] = jsonValue(inner)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, inner := range x {
			out[i] = jsonValue(inner)
		}
		return out
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return v
}
