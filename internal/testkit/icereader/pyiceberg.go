package icereader

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

var (
	//go:embed scripts/encode.py
	encodeScript string
	//go:embed scripts/pyiceberg.py
	pyicebergScript string
)

// ReadOption narrows a ReadPyIceberg scan.
type ReadOption func(map[string]any)

// AtSnapshot reads the table as of snapshot id (time travel).
func AtSnapshot(id int64) ReadOption {
	return func(req map[string]any) { req["snapshot_id"] = id }
}

// Where keeps the rows matching filter, a pyiceberg row filter such as
// "id > 3 and name = 'x'".
func Where(filter string) ReadOption {
	return func(req map[string]any) { req["filter"] = filter }
}

// Select reads only the named top-level columns, in the table's order.
func Select(columns ...string) ReadOption {
	return func(req map[string]any) { req["columns"] = columns }
}

// ReadPyIceberg scans table ("namespace.table") through cat with pyiceberg
// 0.12 (PyArrow's reader, in the TRIBUTARY_TEST_PYTHON virtualenv) and
// returns its rows in the scan's order (by data file; sort to compare).
// About 3 s. Fails t on any error.
func ReadPyIceberg(t testing.TB, cat Catalog, table string, opts ...ReadOption) Result {
	t.Helper()
	req := map[string]any{"op": "scan", "table": table}
	for _, o := range opts {
		o(req)
	}
	raw := runPyIceberg(t, cat, req)
	res, err := decodeResult(raw)
	if err != nil {
		t.Fatalf("pyiceberg scan of %s: %v", table, err)
	}
	return res
}

// Metadata is what pyiceberg reads of a table's metadata file, in the
// Iceberg spec's JSON names.
type Metadata struct {
	// MetadataLocation is the metadata file the catalog points at.
	MetadataLocation  string            `json:"metadata-location"`
	Location          string            `json:"location"`
	TableUUID         string            `json:"table-uuid"`
	FormatVersion     int               `json:"format-version"`
	CurrentSnapshotID int64             `json:"current-snapshot-id"` // 0: none
	Properties        map[string]string `json:"properties"`
	// Snapshots are the table's snapshots, oldest first.
	Snapshots []Snapshot `json:"snapshots"`
	// Refs are the branches and tags by name ("main": the current snapshot).
	Refs map[string]Ref `json:"refs"`
	// Raw is the whole metadata (schemas, partition specs, sort orders,
	// logs) as pyiceberg serialises it.
	Raw json.RawMessage `json:"-"`
}

// Snapshot is one snapshot of a table.
type Snapshot struct {
	ID             int64  `json:"snapshot-id"`
	ParentID       int64  `json:"parent-snapshot-id"` // 0: none
	SequenceNumber int64  `json:"sequence-number"`
	TimestampMs    int64  `json:"timestamp-ms"`
	ManifestList   string `json:"manifest-list"`
	SchemaID       int    `json:"schema-id"`
	// Summary holds "operation" (append, replace, overwrite, delete) and
	// the writer's properties.
	Summary map[string]string `json:"summary"`
}

// Ref is a branch or a tag.
type Ref struct {
	SnapshotID int64  `json:"snapshot-id"`
	Type       string `json:"type"`
}

// Snapshot returns the snapshot id, or false.
func (m Metadata) Snapshot(id int64) (Snapshot, bool) {
	for _, s := range m.Snapshots {
		if s.ID == id {
			return s, true
		}
	}
	return Snapshot{}, false
}

// Current returns the current snapshot, or false if the table has none.
func (m Metadata) Current() (Snapshot, bool) {
	if m.CurrentSnapshotID == 0 {
		return Snapshot{}, false
	}
	return m.Snapshot(m.CurrentSnapshotID)
}

// ReadMetadata loads table through cat with pyiceberg and returns its
// metadata: snapshots with their summaries, and properties. Fails t on any
// error.
func ReadMetadata(t testing.TB, cat Catalog, table string) Metadata {
	t.Helper()
	raw := runPyIceberg(t, cat, map[string]any{"op": "metadata", "table": table})
	var md Metadata
	if err := json.Unmarshal(raw, &md); err != nil {
		t.Fatalf("pyiceberg metadata of %s: %v: %s", table, err, raw)
	}
	md.Raw = raw
	return md
}

// PyIcebergScript runs code, Python, with pyiceberg's catalog cat bound as
// catalog and input (as JSON) as input; what code assigns to result comes
// back as JSON, decoded into output (nil: ignored). For tables written by
// pyiceberg itself, and for what the helpers here do not read. Fails t on
// any error.
func PyIcebergScript(t testing.TB, cat Catalog, code string, input, output any) {
	t.Helper()
	raw := runPyIceberg(t, cat, map[string]any{"op": "script", "code": code, "input": input})
	if output == nil {
		return
	}
	if err := json.Unmarshal(raw, output); err != nil {
		t.Fatalf("pyiceberg script's result: %v: %s", err, raw)
	}
}

// runPyIceberg runs one request of scripts/pyiceberg.py and returns its
// result.
func runPyIceberg(t testing.TB, cat Catalog, req map[string]any) json.RawMessage {
	t.Helper()
	python(t, "pyiceberg, pyarrow")
	var out []json.RawMessage
	testenv.PythonScript(t, encodeScript+pyicebergScript,
		map[string]any{"catalog": cat.pyConfig(), "requests": []any{req}}, &out)
	if len(out) != 1 {
		t.Fatal(fmt.Errorf("%w: %d results for one request", ErrBadOutput, len(out)))
	}
	return out[0]
}

// namespaceScript makes namespace input["ns"] at input["location"], or, with
// input["drop"], drops its tables (from the catalog; their files stay) and it.
const namespaceScript = `
ns = input["ns"]
if input.get("drop"):
    for ident in catalog.list_tables(ns):
        catalog.drop_table(ident)
    catalog.drop_namespace(ns)
else:
    catalog.create_namespace(ns, {"location": input["location"]})
`

// Namespace makes a namespace of t's own in cat, named prefix and a unique
// suffix, its location cat.Warehouse/NAME.db (so that a Hive catalog's
// tables go where the test says, not to the metastore's warehouse), and
// drops it and its tables from the catalog when t ends. Returns its name.
func Namespace(t testing.TB, cat Catalog, prefix string) string {
	t.Helper()
	ns := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	PyIcebergScript(t, cat, namespaceScript, map[string]any{"ns": ns, "location": strings.TrimSuffix(cat.Warehouse, "/") + "/" + ns + ".db"}, nil)
	t.Cleanup(func() {
		PyIcebergScript(t, cat, namespaceScript, map[string]any{"ns": ns, "drop": true}, nil)
	})
	return ns
}
