package rows

import (
	"bufio"
	"encoding/json"
	"fmt"

	"github.com/linkedin/goavro/v2"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
)

// Read calls fn with every record of the data file d, in file order, as
// a plain value (see the package doc), and returns how many it read.
func Read(fsys filesys.FS, d hours.Data, fn func(rec map[string]any) error) (int64, error) {
	var n int64
	var err error
	switch d.Format {
	case hours.Avro:
		n, err = readAvro(fsys, d.Path(), fn)
	case hours.Parquet:
		n, err = readParquet(fsys, d.Path(), fn)
	default:
		err = fmt.Errorf("format %q is not known", d.Format)
	}
	if err != nil {
		return n, fmt.Errorf("rows: %s: %w", d.Path(), err)
	}
	return n, nil
}

func readAvro(fsys filesys.FS, name string, fn func(map[string]any) error) (int64, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r, err := goavro.NewOCFReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return 0, err
	}
	var schema any
	if err := json.Unmarshal([]byte(r.Codec().Schema()), &schema); err != nil {
		return 0, fmt.Errorf("writer schema: %w", err)
	}
	av := &avroPlain{named: map[string]any{}}
	var n int64
	for r.Scan() {
		v, err := r.Read()
		if err != nil {
			return n, fmt.Errorf("record %d: %w", n, err)
		}
		p, err := av.plain(schema, "", v)
		if err != nil {
			return n, fmt.Errorf("record %d: %w", n, err)
		}
		rec, ok := p.(map[string]any)
		if !ok {
			return n, fmt.Errorf("record %d is a %T, not a record", n, p)
		}
		if err := fn(rec); err != nil {
			return n, err
		}
		n++
	}
	return n, r.Err()
}
