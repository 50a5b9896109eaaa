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
	// plain holds the dictionary columns written PLAIN instead, for the
	// rest of the file: those whose first batch was mostly distinct values
	// (see plainFallback).
	plain map[string]*common.Tag
}

// Dictionary fallback, as parquet-mr falls back when a dictionary grows
// too large: a column whose values are mostly distinct (ids, hashes) gains
// nothing from a dictionary, which then holds every value once plus an
// index per row that no codec compresses. The first batch of a file
// decides, once it has plainMinValues values.
const (
	plainMinValues     = 1000
	plainDistinctShare = 0.5
)

// plainFallback reports whether dictionary column name (table t, this
// batch) is written PLAIN, deciding on the first large enough batch.
func (s *shredder) plainFallback(name string, t *layout.Table) bool {
	if _, ok := s.plain[name]; ok {
		return true
	}
	if s.pw.DictRecs[name] != nil {
		return false // a dictionary was started: keep it
	}
	n := 0
	seen := map[any]struct{}{}
	for j, v := range t.Values {
		if t.DefinitionLevels[j] == t.MaxDefinitionLevel {
			n++
			seen[v] = struct{}{}
		}
	}
	if n < plainMinValues || float64(len(seen)) <= plainDistinctShare*float64(n) {
		return false
	}
	info := *t.Info
	info.Encoding = parquet.Encoding_PLAIN
	if s.plain == nil {
		s.plain = map[string]*common.Tag{}
	}
	s.plain[name] = &info
	return true
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
	// Dictionary columns become pages here and leave the map: the writer
	// still closes their row groups (dictionary page first) from DictRecs.
	for name, t := range res {
		if t.Info.Encoding != parquet.Encoding_RLE_DICTIONARY {
			continue
		}
		if s.plainFallback(name, t) {
			t.Info = s.plain[name] // parquet-go writes its PLAIN pages
			continue
		}
		dict := s.pw.DictRecs[name]
		if dict == nil {
			dict = layout.NewDictRec(*t.Schema.Type)
			s.pw.DictRecs[name] = dict
		}
		pages, size := dictPages(dict, t, int32(s.pw.PageSize), s.pw.CompressionType)
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
