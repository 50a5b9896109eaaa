package compact

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"
	"github.com/xitongsys/parquet-go/layout"
	"github.com/xitongsys/parquet-go/parquet"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/hours/rows"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// timestampFooterScript reads each Parquet file (argv) with pyarrow and
// prints, per timestamp column, its physical type, logical type, Arrow
// type, where each chunk's first data page is (its file and offset: the
// footer's encodings list is parquet-go's fixed one, so the page headers
// tell) and its values as epoch milliseconds (null as None).
const timestampFooterScript = `
import json, sys
import pyarrow as pa, pyarrow.parquet as pq
out = {}
for p in sys.argv[1:]:
    f = pq.ParquetFile(p)
    t = f.read()
    for i, name in enumerate(f.schema_arrow.names):
        col = f.schema.column(i)
        c = out.setdefault(name, {"physical": col.physical_type, "logical": str(col.logical_type),
            "arrow": str(t.schema.field(name).type), "pages": [], "millis": []})
        for g in range(f.metadata.num_row_groups):
            c["pages"].append([p, f.metadata.row_group(g).column(i).data_page_offset])
        c["millis"] += t.column(name).cast(pa.int64()).to_pylist() if pa.types.is_timestamp(t.schema.field(name).type) else []
print("ROWS " + json.dumps(out))
`

// timestampSample is one hour of a record with a timestamp-millis and a
// nullable one, holding instants far before 1970 and after 2038 (past
// 32-bit seconds and 64-bit nanoseconds alike).
func timestampSample() (sizeSample, []time.Time) {
	instants := []time.Time{
		time.Date(1, 1, 1, 0, 0, 0, 1e6, time.UTC),
		time.Date(1582, 10, 4, 12, 0, 0, 0, time.UTC),
		time.Date(1899, 12, 31, 23, 59, 59, 999e6, time.UTC),
		time.Date(1969, 7, 20, 20, 17, 40, 123e6, time.UTC),
		time.UnixMilli(-1).UTC(),
		time.UnixMilli(0).UTC(),
		time.Date(2026, 12, 4, 10, 30, 0, 42e6, time.UTC),
		time.Date(2038, 1, 19, 3, 14, 8, 0, time.UTC),
		time.Date(2262, 4, 11, 23, 47, 16, 855e6, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC),
	}
	const schema = `{"type": "record", "name": "Event", "fields": [
	  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
	  {"name": "maybe", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}], "default": null}]}`
	return sizeSample{topic: "events", schema: schema, hours: 1, gen: func(int, time.Time) []partRecord {
		var out []partRecord
		for i, ts := range instants {
			var maybe any
			if i%3 != 1 {
				maybe = map[string]any{"long.timestamp-millis": ts}
			}
			out = append(out, partRecord{0, map[string]any{"ts": ts, "maybe": maybe}})
		}
		return out
	}}, instants
}

// TestParquetTimestampINT64: with TimestampType INT64 a timestamp-millis
// column is INT64 TIMESTAMP(MILLIS, isAdjustedToUTC=true), delta-encoded,
// as pyarrow reads the footer; pyarrow reads every value back as the same
// millisecond (year 1 to 9999) and package rows as the same instant. The
// default stays INT96.
func TestParquetTimestampINT64(t *testing.T) {
	s, instants := timestampSample()
	for _, c := range []struct {
		typ, physical, arrow string
	}{{TimestampINT64, "INT64", "timestamp[ms, tz=UTC]"}, {"", "INT96", "timestamp[ns]"}} {
		t.Run("type="+c.physical, func(t *testing.T) {
			fsys, base := filesys.Local(), t.TempDir()
			dirs := writeSample(t, fsys, base, s)
			cm, err := New(Config{FS: fsys, Base: base, ClosedThrough: closedAll, TimestampType: c.typ})
			if err != nil {
				t.Fatal(err)
			}
			if sum, err := cm.Run(context.Background()); err != nil || sum.HoursCompacted != 1 {
				t.Fatalf("compaction: %+v, %v", sum, err)
			}
			local := copyOut(t, fsys, dirs[0], compactedFiles(t, fsys, dirs[0]), t.TempDir())
			if c.typ == "" {
				// INT96 holds no instant past 2262 as pyarrow's nanoseconds:
				// only the footer is checked here (the value tests are TestCompact*'s).
				var cols map[string]struct{ Physical, Arrow string }
				testenv.PythonScript(t, `
import json, sys, pyarrow.parquet as pq
f = pq.ParquetFile(sys.argv[1])
print("ROWS " + json.dumps({n: {"physical": f.schema.column(i).physical_type, "arrow": str(f.schema_arrow.field(n).type)} for i, n in enumerate(f.schema_arrow.names)}))
`, nil, &cols, local...)
				for _, name := range []string{"ts", "maybe"} {
					if got := cols[name]; got.Physical != c.physical || got.Arrow != c.arrow {
						t.Errorf("%s: %+v, want %s read as %s", name, got, c.physical, c.arrow)
					}
				}
				return
			}
			var cols map[string]struct {
				Physical, Logical, Arrow string
				Pages                    [][2]any
				Millis                   []*int64
			}
			testenv.PythonScript(t, timestampFooterScript, nil, &cols, local...)
			for _, name := range []string{"ts", "maybe"} {
				got := cols[name]
				if got.Physical != "INT64" || got.Logical != "Timestamp(isAdjustedToUTC=true, timeUnit=milliseconds, is_from_converted_type=false, force_set_converted_type=false)" ||
					got.Arrow != c.arrow {
					t.Errorf("%s: physical %s, logical %s, arrow %s: want INT64 TIMESTAMP(MILLIS, UTC) read as %s", name, got.Physical, got.Logical, got.Arrow, c.arrow)
				}
				for _, p := range got.Pages {
					if enc := firstPageEncoding(t, p[0].(string), int64(p[1].(float64))); enc != parquet.Encoding_DELTA_BINARY_PACKED {
						t.Errorf("%s: the data page at %v of %s is %v, want DELTA_BINARY_PACKED", name, p[1], p[0], enc)
					}
				}
				if len(got.Millis) != len(instants) {
					t.Fatalf("%s: %d values, want %d", name, len(got.Millis), len(instants))
				}
				for i, ts := range instants {
					null := name == "maybe" && i%3 == 1
					if m := got.Millis[i]; null != (m == nil) || (m != nil && *m != ts.UnixMilli()) {
						t.Errorf("%s row %d: pyarrow read %v, want %d (%s, null %v)", name, i, deref(m), ts.UnixMilli(), ts.Format(time.RFC3339Nano), null)
					}
				}
			}
			files, err := hours.TopicData(fsys, base, s.topic)
			if err != nil {
				t.Fatal(err)
			}
			var got []map[string]any
			for _, d := range files {
				if d.Format != hours.Parquet {
					t.Fatalf("%s is not Parquet", d.Path())
				}
				if _, err := rows.Read(fsys, d, func(rec map[string]any) error { got = append(got, rec); return nil }); err != nil {
					t.Fatal(err)
				}
			}
			if len(got) != len(instants) {
				t.Fatalf("rows read %d records, want %d", len(got), len(instants))
			}
			for i, ts := range instants {
				if v, ok := got[i]["ts"].(time.Time); !ok || !v.Equal(ts) {
					t.Errorf("rows: ts of row %d = %v, want %s", i, got[i]["ts"], ts.Format(time.RFC3339Nano))
				}
			}
		})
	}
}

// firstPageEncoding reads the header of the data page at off in file.
func firstPageEncoding(t *testing.T, file string, off int64) parquet.Encoding {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	h, err := layout.ReadPageHeader(thrift.NewTBufferedTransport(thrift.NewStreamTransportR(bytes.NewReader(b[off:])), 1<<10))
	if err != nil || h.DataPageHeader == nil {
		t.Fatalf("page header at %d of %s: %v, %v", off, file, h, err)
	}
	return h.DataPageHeader.Encoding
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestTimestampTypeValidated: a TimestampType other than INT96 or INT64
// fails New with ErrInvalidConfig naming it; ParseTimestampType takes either
// case and gives INT96 for "".
func TestTimestampTypeValidated(t *testing.T) {
	_, err := New(Config{FS: filesys.Local(), Base: t.TempDir(), ClosedThrough: closedAll, TimestampType: "INT32"})
	if !errors.Is(err, ErrInvalidConfig) || err.Error() != `compact: invalid configuration: timestamp type "INT32": want INT96 or INT64` {
		t.Errorf("New with INT32: %v", err)
	}
	for in, want := range map[string]string{"": TimestampINT96, "int96": TimestampINT96, "INT64": TimestampINT64, " int64 ": TimestampINT64} {
		if got, err := ParseTimestampType(in); err != nil || got != want {
			t.Errorf("ParseTimestampType(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseTimestampType("TIMESTAMP_MILLIS"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("ParseTimestampType(TIMESTAMP_MILLIS): %v, want ErrInvalidConfig", err)
	}
}
