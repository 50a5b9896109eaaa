package icetable

import (
	"errors"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func metaWith(t testing.TB, props iceberg.Properties) table.Metadata {
	t.Helper()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int64})
	m, err := table.NewMetadata(sc, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "file:///t", props)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// FuzzCommittedProperties: whatever a table's properties hold, committedIn
// either refuses them with ErrSummary or returns non-negative offsets, one
// entry at most per property.
func FuzzCommittedProperties(f *testing.F) {
	f.Add("tributary.offsets.0", "12", "tributary.origin.0", "x")
	f.Add("tributary.offsets.-1", "1", "tributary.offsets.x", "2")
	f.Add("tributary.offsets.3", "-5", "other", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		m := metaWith(t, iceberg.Properties{k1: v1, k2: v2})
		c, err := committedIn(m)
		if err != nil {
			if !errors.Is(err, ErrSummary) {
				t.Fatalf("err %v, want ErrSummary", err)
			}
			return
		}
		for p, o := range c.Offsets {
			if o < 0 {
				t.Fatalf("partition %d: negative offset %d", p, o)
			}
		}
		if len(c.Offsets)+len(c.Origins) > 2 {
			t.Fatalf("%d entries from 2 properties", len(c.Offsets)+len(c.Origins))
		}
	})
}

func TestCommittedRefusesForeignValues(t *testing.T) {
	for _, props := range []iceberg.Properties{
		{"tributary.offsets.x": "1"},
		{"tributary.offsets.0": "ten"},
		{"tributary.offsets.0": "-1"},
		{"tributary.origin.p": "o"},
	} {
		if _, err := committedIn(metaWith(t, props)); !errors.Is(err, ErrSummary) {
			t.Errorf("%v: err %v, want ErrSummary", props, err)
		}
	}
	c, err := committedIn(metaWith(t, iceberg.Properties{"tributary.offsets.7": "42", "tributary.origin.7": "o"}))
	if err != nil || c.Offsets[7] != 42 || c.Origins[7] != "o" {
		t.Errorf("committed %+v, %v", c, err)
	}
}
