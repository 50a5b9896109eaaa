// Command readloaded reads back what the loader wrote: every Avro object
// container file under a directory in the loader's layout
// (<topic>/<yyyy>/<MM>/<dd>/<HH>/*.avro; names starting with "_" or "."
// are loader state, not data, and are skipped), printing each record as
// one JSON line and a count at the end. Each file carries its writer
// schema, so no registry is needed.
//
//	readloaded --dir tributary-pipeline-data/data/pageviews --max 5
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/linkedin/goavro/v2"
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
	var files, records int
	err := filepath.WalkDir(*dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != *dir && (strings.HasPrefix(d.Name(), "_") || strings.HasPrefix(d.Name(), ".")) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".avro") {
			return nil
		}
		n, err := readFile(path, out, func() bool { return *maxPrint < 0 || records < *maxPrint })
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		files++
		records += n
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "read %d records from %d files\n", records, files)
	return nil
}

// readFile prints the records of one container file while print says so.
func readFile(path string, out *bufio.Writer, print func() bool) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r, err := goavro.NewOCFReader(bufio.NewReader(f))
	if err != nil {
		return 0, err
	}
	n := 0
	for r.Scan() {
		v, err := r.Read()
		if err != nil {
			return n, err
		}
		if print() {
			b, err := json.Marshal(plain(v))
			if err != nil {
				return n, err
			}
			out.Write(b)
			out.WriteByte('\n')
		}
		n++
	}
	return n, r.Err()
}

// plain turns goavro's native values into JSON-friendly ones: a union
// {"string": "x"} becomes "x", a timestamp its RFC 3339 text.
func plain(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, inner := range x {
				switch k {
				case "string", "long", "int", "double", "float", "boolean", "bytes":
					return plain(inner)
				}
			}
		}
		m := make(map[string]any, len(x))
		for k, inner := range x {
			m[k] = plain(inner)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, inner := range x {
			out[i] = plain(inner)
		}
		return out
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return v
}
