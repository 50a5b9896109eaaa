package avro

import (
	"fmt"
	"slices"
)

// Check lists why data written with writer cannot be read with reader; an
// empty result means reader can read everything writer can write.
func Check(reader, writer *Schema) []string {
	c := newChecker()
	return c.check(reader.Root, writer.Root, "/")
}

// Compatible is Check as an error wrapping ErrIncompatible, or nil.
func Compatible(reader, writer *Schema) error {
	if problems := Check(reader, writer); len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrIncompatible, problems[0])
	}
	return nil
}

type typePair struct{ reader, writer *Type }

type checker struct {
	// memo holds finished results, and nil for pairs being checked: a
	// recursive record meeting itself again is assumed compatible, the
	// coinductive reading the Avro Java implementation also uses.
	memo map[typePair][]string
}

func newChecker() *checker { return &checker{memo: map[typePair][]string{}} }

func (c *checker) check(r, w *Type, path string) []string {
	key := typePair{r, w}
	if res, ok := c.memo[key]; ok {
		return res
	}
	c.memo[key] = nil
	res := c.checkUncached(r, w, path)
	c.memo[key] = res
	return res
}

func (c *checker) checkUncached(r, w *Type, path string) []string {
	if w.Kind == Union {
		var out []string
		for i, wb := range w.Branches {
			if r.Kind == Union {
				if c.readerBranch(r, wb) < 0 {
					out = append(out, fmt.Sprintf("%s: reader union has no branch for writer union branch %d (%s)", path, i, describe(wb)))
				}
				continue
			}
			out = append(out, c.check(r, wb, path)...)
		}
		return out
	}
	if r.Kind == Union {
		if c.readerBranch(r, w) < 0 {
			return []string{fmt.Sprintf("%s: reader union has no branch for writer type %s", path, describe(w))}
		}
		return nil
	}
	if r.Kind != w.Kind {
		if promotable(w.Kind, r.Kind) {
			return nil
		}
		return []string{fmt.Sprintf("%s: reader type %s cannot read writer type %s", path, describe(r), describe(w))}
	}
	switch r.Kind {
	case Record:
		if !namesMatch(r, w) {
			return []string{fmt.Sprintf("%s: reader record %s does not match writer record %s", path, r.Name, w.Name)}
		}
		var out []string
		for _, rf := range r.Fields {
			wf := writerField(rf, w)
			fpath := path + rf.Name + "/"
			if wf == nil {
				if !rf.HasDefault() {
					out = append(out, fmt.Sprintf("%s: reader field %q is missing from the writer and has no default", fpath, rf.Name))
				}
				continue
			}
			out = append(out, c.check(rf.Type, wf.Type, fpath)...)
		}
		return out
	case Enum:
		if !namesMatch(r, w) {
			return []string{fmt.Sprintf("%s: reader enum %s does not match writer enum %s", path, r.Name, w.Name)}
		}
		if r.HasEnumDefault {
			return nil
		}
		var out []string
		for _, s := range w.Symbols {
			if !slices.Contains(r.Symbols, s) {
				out = append(out, fmt.Sprintf("%s: writer enum symbol %q is missing from reader enum %s, which has no default", path, s, r.Name))
			}
		}
		return out
	case Fixed:
		if !namesMatch(r, w) {
			return []string{fmt.Sprintf("%s: reader fixed %s does not match writer fixed %s", path, r.Name, w.Name)}
		}
		if r.Size != w.Size {
			return []string{fmt.Sprintf("%s: fixed %s size %d cannot read size %d", path, r.Name, r.Size, w.Size)}
		}
		return nil
	case Array:
		return c.check(r.Items, w.Items, path+"items/")
	case Map:
		return c.check(r.Values, w.Values, path+"values/")
	}
	return nil
}

// readerBranch is the index of the first branch of the reader union that
// can read w, or -1.
func (c *checker) readerBranch(r, w *Type) int {
	for i, rb := range r.Branches {
		if len(c.check(rb, w, "/")) == 0 {
			return i
		}
	}
	return -1
}

// promotable reports whether a reader of kind r reads a writer's kind w.
func promotable(w, r Kind) bool {
	switch w {
	case Int:
		return r == Long || r == Float || r == Double
	case Long:
		return r == Float || r == Double
	case Float:
		return r == Double
	case String:
		return r == Bytes
	case Bytes:
		return r == String
	}
	return false
}

func namesMatch(r, w *Type) bool {
	if shortName(r.Name) == shortName(w.Name) {
		return true
	}
	for _, a := range r.Aliases {
		if a == w.Name || shortName(a) == shortName(w.Name) {
			return true
		}
	}
	return false
}

func writerField(rf *Field, w *Type) *Field {
	for _, wf := range w.Fields {
		if wf.Name == rf.Name {
			return wf
		}
	}
	for _, a := range rf.Aliases {
		for _, wf := range w.Fields {
			if wf.Name == a {
				return wf
			}
		}
	}
	return nil
}
