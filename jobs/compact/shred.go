package compact

import (
	"fmt"
	"sort"

	"github.com/xitongsys/parquet-go/common"
	"github.com/xitongsys/parquet-go/layout"
	"github.com/xitongsys/parquet-go/parquet"
	"github.com/xitongsys/parquet-go/schema"
	"github.com/xitongsys/parquet-go/writer"
)

// shredder turns Avro values (goavro's native form) into parquet-go's
// column tables with Dremel definition and repetition levels. It replaces
// parquet-go's reflection- and JSON-based marshallers, which need Go
// structs or lose type information.
type shredder struct {
	root   *node
	leaves []*node
	tables []*layout.Table
	err    error
	// pw receives the dictionary columns' pages directly (see dictPages).
	pw *writer.ParquetWriter
	// enc holds each column's encoding for the rest of the file, decided
	// on its first batch (see encoding).
	enc map[string]*common.Tag
}

// Encodings by trial. A file's first batch of a column with at least
// trialMinValues values is encoded and compressed every way its type
// offers here, and the smallest way is the column's for the rest of the
// file: a dictionary (RLE_DICTIONARY, pages.go) against DELTA_LENGTH_BYTE_ARRAY
// for strings, DELTA_BINARY_PACKED for ints, longs and the logical types on
// them, and PLAIN for floats and doubles. A column of mostly distinct
// values (ids, hashes, latencies, timestamps, sequence numbers) gains
// nothing from a dictionary, which then holds every value once plus an
// index per row; one of few (hosts, status codes, shards, scores of two
// decimals) costs an index of a few bits a row. As parquet-mr falls back
// from an oversized dictionary, but decided by measuring. Smaller batches
// keep the default (strings in a dictionary, the rest in their own
// encoding); booleans, bytes, fixed and decimals are always PLAIN.
// BYTE_STREAM_SPLIT is not offered: Hive's parquet-mr (before 1.12) cannot
// read it, and on the wide sample's decimal-fraction doubles it lost to
// PLAIN (212,779 bytes against 114,840 for a latency column).
const trialMinValues = 1000

// encoding returns the encoding of column name (table t, this batch) for
// the rest of the file.
func (s *shredder) encoding(name string, t *layout.Table) *common.Tag {
	if info, ok := s.enc[name]; ok {
		return info
	}
	info := *t.Info
	if s.enc == nil {
		s.enc = map[string]*common.Tag{}
	}
	s.enc[name] = &info
	var other parquet.Encoding
	switch typ := *t.Schema.Type; {
	case typ == parquet.Type_BYTE_ARRAY && info.Encoding == parquet.Encoding_RLE_DICTIONARY:
		other = parquet.Encoding_DELTA_LENGTH_BYTE_ARRAY
	case typ == parquet.Type_INT32 || typ == parquet.Type_INT64 || typ == parquet.Type_INT96 || typ == parquet.Type_FLOAT || typ == parquet.Type_DOUBLE:
		other = parquet.Encoding_RLE_DICTIONARY
	default:
		return &info
	}
	var vals []any
	for j, v := range t.Values {
		if t.DefinitionLevels[j] == t.MaxDefinitionLevel {
			vals = append(vals, v)
		}
	}
	if len(vals) < trialMinValues {
		return &info
	}
	codec := s.pw.CompressionType
	if trialSize(vals, other, t, codec) < trialSize(vals, info.Encoding, t, codec) {
		info.Encoding = other
	}
	return &info
}

// marshal is a parquet-go MarshalFunc; the writer calls it with NP = 1, so
// never concurrently.
func (s *shredder) marshal(objs []any, sh *schema.SchemaHandler) (*map[string]*layout.Table, error) {
	res := make(map[string]*layout.Table, len(s.leaves))
	s.tables = s.tables[:0]
	for i := range sh.SchemaElements {
		el := sh.SchemaElements[i]
		if el.GetNumChildren() != 0 {
			continue
		}
		pathStr := sh.IndexMap[int32(i)]
		t := layout.NewEmptyTable()
		t.Path = common.StrToPath(pathStr)
		t.MaxDefinitionLevel, _ = sh.MaxDefinitionLevel(t.Path)
		t.MaxRepetitionLevel, _ = sh.MaxRepetitionLevel(t.Path)
		t.RepetitionType = el.GetRepetitionType()
		t.Schema = el
		t.Info = sh.Infos[i]
		res[pathStr] = t
		s.tables = append(s.tables, t)
	}
	if len(s.tables) != len(s.leaves) {
		return nil, fmt.Errorf("compact: %d Parquet columns for %d mapped leaves", len(s.tables), len(s.leaves))
	}
	for _, o := range objs {
		if err := s.shred(s.root, o, 0, 0); err != nil {
			return nil, err
		}
	}
	// Every column becomes pages here and leaves the map: the writer
	// still closes the row groups (a dictionary column's dictionary page
	// first, from DictRecs).
	for name, t := range res {
		info := s.encoding(name, t)
		pageSize, codec := int32(s.pw.PageSize), s.pw.CompressionType
		var pages []*layout.Page
		var size int64
		if info.Encoding == parquet.Encoding_RLE_DICTIONARY {
			dict := s.pw.DictRecs[name]
			if dict == nil {
				dict = layout.NewDictRec(*t.Schema.Type)
				s.pw.DictRecs[name] = dict
			}
			t.Info = info
			pages, size = dictPages(dict, t, pageSize, codec)
		} else {
			pages, size = valuePages(t, info, pageSize, codec)
		}
		s.pw.PagesMapBuf[name] = append(s.pw.PagesMapBuf[name], pages...)
		s.pw.Size += size
		delete(res, name)
	}
	return &res, nil
}

func (s *shredder) emit(leaf *node, v any, r, d int32) {
	t := s.tables[leaf.leaf]
	t.Values = append(t.Values, v)
	t.DefinitionLevels = append(t.DefinitionLevels, d)
	t.RepetitionLevels = append(t.RepetitionLevels, r)
}

// nulls records "absent at definition level d" for every column under n.
func (s *shredder) nulls(n *node, r, d int32) {
	if n.kind == kindLeaf {
		s.emit(n, nil, r, d)
		return
	}
	for _, c := range n.children {
		s.nulls(c, r, d)
	}
}

// unwrapUnion returns the value of a union-with-null's branch.
func unwrapUnion(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for _, x := range m {
			return x
		}
	}
	return v
}

func (s *shredder) shred(n *node, v any, r, d int32) error {
	if n.unwrap && v != nil {
		v = unwrapUnion(v)
	}
	if n.optional {
		if v == nil {
			s.nulls(n, r, d)
			return nil
		}
		d++
	}
	switch n.kind {
	case kindLeaf:
		pv, err := n.conv(v)
		if err != nil {
			return fmt.Errorf("compact: field %s: %w", n.name, err)
		}
		s.emit(n, pv, r, d)
	case kindRecord:
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("compact: field %s: value %T is not a record", n.name, v)
		}
		for _, c := range n.children {
			if err := s.shred(c, m[c.field], r, d); err != nil {
				return err
			}
		}
	case kindUnion:
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return fmt.Errorf("compact: field %s: value %T is not a union value", n.name, v)
		}
		matched := false
		for i, c := range n.children {
			val, ok := m[n.branches[i]]
			if !ok {
				val = nil
			} else {
				matched = true
			}
			if err := s.shred(c, val, r, d); err != nil {
				return err
			}
		}
		if !matched {
			return fmt.Errorf("compact: field %s: union branch %v not in the schema", n.name, m)
		}
	case kindList:
		items, ok := v.([]any)
		if !ok {
			return fmt.Errorf("compact: field %s: value %T is not an array", n.name, v)
		}
		if len(items) == 0 {
			s.nulls(n, r, d)
			return nil
		}
		for i, it := range items {
			rr := r
			if i > 0 {
				rr = n.repLevel
			}
			if err := s.shred(n.children[0], it, rr, d+1); err != nil {
				return err
			}
		}
	case kindMap:
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("compact: field %s: value %T is not a map", n.name, v)
		}
		if len(m) == 0 {
			s.nulls(n, r, d)
			return nil
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			rr := r
			if i > 0 {
				rr = n.repLevel
			}
			s.emit(n.children[0], k, rr, d+1)
			if err := s.shred(n.children[1], m[k], rr, d+1); err != nil {
				return err
			}
		}
	}
	return nil
}
