package rows

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"reflect"
	"time"

	"github.com/xitongsys/parquet-go/parquet"
	"github.com/xitongsys/parquet-go/reader"
	"github.com/xitongsys/parquet-go/source"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/schema/avro"
)

// readBatch is how many rows are decoded at once.
const readBatch = 1024

func readParquet(fsys filesys.FS, name string, fn func(map[string]any) error) (int64, error) {
	pf, err := openSource(fsys, name)
	if err != nil {
		return 0, err
	}
	defer pf.Close()
	pr, err := reader.NewParquetReader(pf, nil, 1)
	if err != nil {
		return 0, err
	}
	defer pr.ReadStop()
	root := schemaTree(pr)
	for _, kv := range pr.Footer.KeyValueMetadata {
		if kv.Key == hours.ParquetAvroSchemaKey && kv.Value != nil {
			var doc any
			if json.Unmarshal([]byte(*kv.Value), &doc) == nil {
				root.markTimes(doc, "", map[string]any{}, 0)
			}
		}
	}
	total := pr.GetNumRows()
	var n int64
	for n < total {
		batch, err := pr.ReadByNumber(int(min(readBatch, total-n)))
		if err != nil {
			return n, fmt.Errorf("row %d: %w", n, err)
		}
		if len(batch) == 0 {
			return n, fmt.Errorf("row %d: %w", n, io.ErrUnexpectedEOF)
		}
		for _, row := range batch {
			p, err := root.plain(reflect.ValueOf(row))
			if err != nil {
				return n, fmt.Errorf("row %d: %w", n, err)
			}
			rec, _ := p.(map[string]any)
			if err := fn(rec); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// pnode is one element of a Parquet schema, with its original name.
type pnode struct {
	name     string
	el       *parquet.SchemaElement
	children []*pnode
	// time is the Avro logical type of an unannotated time-millis or
	// time-micros leaf (package compact writes them as plain integers),
	// found in the file's Avro schema.
	time string
}

// markTimes walks the Avro schema s alongside n as package compact maps
// one onto the other (records to groups, arrays to list/element, maps to
// key_value/value, a union with null to its branch, other unions to
// member0, member1, ...) and marks the time-millis and time-micros leaves.
func (n *pnode) markTimes(s any, ns string, named map[string]any, depth int) {
	if n == nil || depth > 64 {
		return
	}
	child := func(i int) *pnode {
		if i < len(n.children) {
			return n.children[i]
		}
		return nil
	}
	switch s := s.(type) {
	case []any:
		var branches []any
		for _, b := range s {
			if b != "null" {
				branches = append(branches, b)
			}
		}
		if len(branches) == 1 {
			n.markTimes(branches[0], ns, named, depth+1)
			return
		}
		for i, b := range branches {
			child(i).markTimes(b, ns, named, depth+1)
		}
	case string:
		if def, ok := named[s]; ok {
			n.markTimes(def, ns, named, depth+1)
		} else if def, ok := named[ns+"."+s]; ok {
			n.markTimes(def, ns, named, depth+1)
		}
	case map[string]any:
		if lt, _ := s["logicalType"].(string); lt == "time-millis" || lt == "time-micros" {
			n.time = lt
			return
		}
		switch t := s["type"].(type) {
		case map[string]any, []any:
			n.markTimes(t, ns, named, depth+1)
			return
		}
		switch s["type"] {
		case "record", "error":
			full, inner := avro.NameOf(s, ns)
			named[full] = s
			fields, _ := s["fields"].([]any)
			for i, f := range fields {
				fd, _ := f.(map[string]any)
				child(i).markTimes(fd["type"], inner, named, depth+1)
			}
		case "enum", "fixed":
			full, _ := avro.NameOf(s, ns)
			named[full] = s
		case "array":
			if c := child(0); c != nil && len(c.children) > 0 {
				c.children[0].markTimes(s["items"], ns, named, depth+1)
			}
		case "map":
			if c := child(0); c != nil && len(c.children) > 1 {
				c.children[1].markTimes(s["values"], ns, named, depth+1)
			}
		}
	}
}

func schemaTree(pr *reader.ParquetReader) *pnode {
	els := pr.SchemaHandler.SchemaElements
	pos := 0
	var build func() *pnode
	build = func() *pnode {
		n := &pnode{name: pr.SchemaHandler.Infos[pos].ExName, el: els[pos]}
		pos++
		for range n.el.GetNumChildren() {
			n.children = append(n.children, build())
		}
		return n
	}
	return build()
}

func (n *pnode) converted(c parquet.ConvertedType) bool {
	return n.el.ConvertedType != nil && *n.el.ConvertedType == c
}

// plain converts the value parquet-go decoded for n (see schema.GetTypes:
// optional values are pointers, LIST a slice, MAP a map, groups structs
// with fields in schema order).
func (n *pnode) plain(v reflect.Value) (any, error) {
	if v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil, nil
		}
		v = v.Elem()
	}
	if len(n.children) == 0 {
		return n.leaf(v)
	}
	switch {
	case n.converted(parquet.ConvertedType_LIST) && v.Kind() == reflect.Slice:
		elem := n.children[0].children[0]
		out := make([]any, v.Len())
		for i := range out {
			p, err := elem.plain(v.Index(i))
			if err != nil {
				return nil, err
			}
			out[i] = p
		}
		return out, nil
	case n.converted(parquet.ConvertedType_MAP) && v.Kind() == reflect.Map:
		kv := n.children[0]
		out := make(map[string]any, v.Len())
		it := v.MapRange()
		for it.Next() {
			k, err := kv.children[0].plain(it.Key())
			if err != nil {
				return nil, err
			}
			p, err := kv.children[1].plain(it.Value())
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(k)] = p
		}
		return out, nil
	case v.Kind() == reflect.Struct:
		if n.isUnion() {
			for i, c := range n.children {
				if p, err := c.plain(v.Field(i)); err != nil || p != nil {
					return p, err
				}
			}
			return nil, nil
		}
		out := make(map[string]any, len(n.children))
		for i, c := range n.children {
			p, err := c.plain(v.Field(i))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			out[c.name] = p
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: a %s value for a group", n.name, v.Type())
}

// isUnion: a group of member0, member1, ... (package compact's unions).
func (n *pnode) isUnion() bool {
	for i, c := range n.children {
		if c.name != fmt.Sprintf("member%d", i) {
			return false
		}
	}
	return true
}

func (n *pnode) leaf(v reflect.Value) (any, error) {
	switch {
	case n.time == "time-millis":
		return time.Duration(v.Int()) * time.Millisecond, nil
	case n.time == "time-micros":
		return time.Duration(v.Int()) * time.Microsecond, nil
	case n.el.GetType() == parquet.Type_INT96:
		return int96Time(v.String())
	}
	if n.el.ConvertedType != nil {
		switch *n.el.ConvertedType {
		case parquet.ConvertedType_UTF8, parquet.ConvertedType_ENUM:
			return v.String(), nil
		case parquet.ConvertedType_TIMESTAMP_MILLIS:
			return time.UnixMilli(v.Int()).UTC(), nil
		case parquet.ConvertedType_TIMESTAMP_MICROS:
			return time.UnixMicro(v.Int()).UTC(), nil
		case parquet.ConvertedType_DATE:
			return time.Unix(v.Int()*86400, 0).UTC(), nil
		case parquet.ConvertedType_TIME_MILLIS:
			return time.Duration(v.Int()) * time.Millisecond, nil
		case parquet.ConvertedType_TIME_MICROS:
			return time.Duration(v.Int()) * time.Microsecond, nil
		case parquet.ConvertedType_DECIMAL:
			return decimal(v, n.el.GetScale())
		}
	}
	switch v.Kind() {
	case reflect.String: // BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY without a converted type
		return []byte(v.String()), nil
	case reflect.Bool, reflect.Int32, reflect.Int64, reflect.Float32, reflect.Float64:
		return v.Interface(), nil
	}
	return nil, fmt.Errorf("%s: a %s leaf is not understood", n.name, v.Type())
}

// int96Time reads an INT96 timestamp: nanoseconds of the day, then the
// Julian day number, little-endian.
func int96Time(b string) (any, error) {
	if len(b) != 12 {
		return nil, fmt.Errorf("an INT96 of %d bytes", len(b))
	}
	nanos := int64(binary.LittleEndian.Uint64([]byte(b[:8])))
	day := int64(binary.LittleEndian.Uint32([]byte(b[8:])))
	return time.Unix((day-2440588)*86400, nanos).UTC(), nil
}

// decimal reads a DECIMAL: an unscaled two's-complement big-endian integer
// (BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY) or an INT32/INT64 one.
func decimal(v reflect.Value, scale int32) (any, error) {
	unscaled := new(big.Int)
	switch v.Kind() {
	case reflect.String:
		b := []byte(v.String())
		unscaled.SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 {
			unscaled.Sub(unscaled, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
	case reflect.Int32, reflect.Int64:
		unscaled.SetInt64(v.Int())
	default:
		return nil, fmt.Errorf("a %s decimal is not understood", v.Type())
	}
	return new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)), nil
}

// fileSource is a parquet-go source over a filesys file, read only. HDFS
// and local files seek; anything else is read into memory.
type fileSource struct {
	fsys filesys.FS
	name string
	rs   io.ReadSeeker
	c    io.Closer
}

func openSource(fsys filesys.FS, name string) (*fileSource, error) {
	rc, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	f := &fileSource{fsys: fsys, name: name, c: rc}
	if rs, ok := rc.(io.ReadSeeker); ok {
		f.rs = rs
		return f, nil
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return nil, err
	}
	f.rs, f.c = bytes.NewReader(b), io.NopCloser(nil)
	return f, nil
}

// Open opens another handle of the file (parquet-go reads each column
// through its own); name is ignored.
func (f *fileSource) Open(string) (source.ParquetFile, error) { return openSource(f.fsys, f.name) }

func (f *fileSource) Create(string) (source.ParquetFile, error) {
	return nil, fmt.Errorf("%s: read only", f.name)
}

func (f *fileSource) Read(b []byte) (int, error)                { return f.rs.Read(b) }
func (f *fileSource) Seek(off int64, whence int) (int64, error) { return f.rs.Seek(off, whence) }
func (f *fileSource) Write([]byte) (int, error)                 { return 0, fmt.Errorf("%s: read only", f.name) }
func (f *fileSource) Close() error                              { return f.c.Close() }
