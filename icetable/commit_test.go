package icetable

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
)

const simpleSchema = `{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}`

func simpleBatch(t *testing.T, tbl *Table, p int32, from, n int64, origin string) Batch {
	t.Helper()
	b := Batch{Offsets: map[int32]int64{p: from + n}, Origins: map[int32]string{p: origin}}
	for o := from; o < from+n; o++ {
		b.Records = append(b.Records, Record{Partition: p, Offset: o, Timestamp: time.UnixMilli(1714600000000 + o*1000),
			Value: native(t, tbl.avro, map[string]any{"a": o * 10})})
	}
	return b
}

func TestSchemaEvolutionAddsColumns(t *testing.T) {
	cat := newCatalog(t, nil)
	ctx := context.Background()
	v1 := `{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"r","type":{"type":"record","name":"In","fields":[{"name":"x","type":"int"}]}}]}`
	v2 := `{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"r","type":{"type":"record","name":"In","fields":[{"name":"x","type":"int"},{"name":"y","type":["null","string"],"default":null}]}},{"name":"b","type":["null","string"],"default":null}]}`
	tbl, err := cat.Table(ctx, "evo", "evo", mustSchema(t, v1))
	if err != nil {
		t.Fatal(err)
	}
	idA := tbl.Iceberg().Schema().Fields()[0].ID
	idR := tbl.Iceberg().Schema().Fields()[1].ID
	maxID := tbl.Iceberg().Schema().HighestFieldID()
	rec := func(s map[string]any, o int64) Record {
		return Record{Partition: 0, Offset: o, Timestamp: time.UnixMilli(1714600000000), Value: native(t, tbl.avro, s)}
	}
	if err := tbl.Append(ctx, Batch{Records: []Record{rec(map[string]any{"a": int64(1), "r": map[string]any{"x": int32(1)}}, 0)}, Offsets: map[int32]int64{0: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Evolve(ctx, mustSchema(t, v2)); err != nil {
		t.Fatal(err)
	}
	sc := tbl.Iceberg().Schema()
	b, ok := sc.FindFieldByName("b")
	if !ok || b.ID <= maxID {
		t.Fatalf("b: %+v (ok %v), want a new id above %d", b, ok, maxID)
	}
	y, ok := sc.FindFieldByName("r.y")
	if !ok || y.ID <= maxID || y.ID == b.ID {
		t.Fatalf("r.y: %+v (ok %v), want a new id above %d", y, ok, maxID)
	}
	if a, _ := sc.FindFieldByName("a"); a.ID != idA {
		t.Errorf("a's id changed: %d -> %d", idA, a.ID)
	}
	if err := tbl.Append(ctx, Batch{Records: []Record{rec(map[string]any{"a": int64(2), "r": map[string]any{"x": int32(2), "y": map[string]any{"string": "why"}}, "b": map[string]any{"string": "bee"}}, 1)}, Offsets: map[int32]int64{0: 2}}); err != nil {
		t.Fatal(err)
	}
	// Reopening with v2 changes nothing; reopening with v1 (b dropped) too.
	before := tbl.Iceberg().Metadata().CurrentSchema().ID
	for _, s := range []string{v2, v1} {
		t2, err := cat.Table(ctx, "evo", "evo", mustSchema(t, s))
		if err != nil {
			t.Fatal(err)
		}
		if id := t2.Iceberg().Metadata().CurrentSchema().ID; id != before {
			t.Errorf("schema id %d after reopening, want %d", id, before)
		}
	}
	ids, _ := pyTableFacts(t, cat, "evo")
	if ids["a"] != idA || ids["r"] != idR || ids["b"] != b.ID {
		t.Errorf("pyiceberg field ids %v, want a=%d r=%d b=%d", ids, idA, idR, b.ID)
	}
	diffRows(t, []map[string]any{
		{"a": int64(1), "r": map[string]any{"x": int32(1), "y": nil}, "b": nil, "_kafka": kafkaMeta(0, 0, time.UnixMilli(1714600000000))},
		{"a": int64(2), "r": map[string]any{"x": int32(2), "y": "why"}, "b": "bee", "_kafka": kafkaMeta(0, 1, time.UnixMilli(1714600000000))},
	}, pyRead(t, cat, "evo"))
}

// A commit that lands but whose response is lost is not committed again.
func TestLostCommitResponse(t *testing.T) {
	cat := newCatalog(t, nil)
	ctx := context.Background()
	tbl, err := cat.Table(ctx, "lost", "lost", mustSchema(t, simpleSchema))
	if err != nil {
		t.Fatal(err)
	}
	tbl.afterCommit = func(n int, err error) error {
		if n == 0 && err == nil {
			return errors.New("read tcp: connection reset by peer")
		}
		return err
	}
	if err := tbl.Append(ctx, simpleBatch(t, tbl, 0, 0, 5, "o1")); err != nil {
		t.Fatal(err)
	}
	if cat.Retries() != 1 {
		t.Errorf("%d retries, want 1", cat.Retries())
	}
	tbl.afterCommit = nil
	if err := tbl.Append(ctx, simpleBatch(t, tbl, 0, 5, 3, "o2")); err != nil {
		t.Fatal(err)
	}
	got := pyRead(t, cat, "lost")
	if _, files := pyTableFacts(t, cat, "lost"); len(got) != 8 || files != 2 {
		t.Fatalf("%d rows in %d files, want 8 in 2 (each once)", len(got), files)
	}
	for i, r := range got {
		if r["a"] != int64(i*10) {
			t.Errorf("row %d: a=%v, want %d", i, r["a"], i*10)
		}
	}
	if n := len(tbl.Iceberg().Metadata().Snapshots()); n != 2 {
		t.Errorf("%d snapshots, want 2", n)
	}
	c, err := tbl.Committed(ctx)
	if err != nil || c.Offsets[0] != 8 || c.Origins[0] != "o2" {
		t.Errorf("committed %+v, %v; want 8, o2", c, err)
	}
}

// A writer that commits between our load and our commit forces a retry;
// both commits are in the table once.
func TestConcurrentCommitRetried(t *testing.T) {
	cat := newCatalog(t, nil)
	ctx := context.Background()
	tbl, peer := tableAndPeer(t, cat, "conc")
	tbl.beforeCommit = func(n int) {
		if n == 0 {
			if err := peer.Append(ctx, simpleBatch(t, peer, 1, 0, 4, "peer")); err != nil {
				t.Error(err)
			}
		}
	}
	if err := tbl.Append(ctx, simpleBatch(t, tbl, 0, 0, 3, "us")); err != nil {
		t.Fatal(err)
	}
	if cat.Retries() < 1 {
		t.Errorf("%d retries, want at least 1", cat.Retries())
	}
	got := pyRead(t, cat, "conc")
	if len(got) != 7 {
		t.Fatalf("%d rows, want 7", len(got))
	}
	c, err := tbl.Committed(ctx)
	if err != nil || c.Offsets[0] != 3 || c.Offsets[1] != 4 || c.Origins[0] != "us" || c.Origins[1] != "peer" {
		t.Errorf("committed %+v, %v; want 0:3 1:4 origin us", c, err)
	}
	if n := len(tbl.Iceberg().Metadata().Snapshots()); n != 2 {
		t.Errorf("%d snapshots, want 2", n)
	}
	// The refused attempt's manifest list and manifest were removed.
	if lists, manifests := metadataFiles(t, tbl); lists != 2 || manifests != 2 {
		t.Errorf("%d manifest lists and %d manifests, want 2 and 2", lists, manifests)
	}
}

// Committed finds the offsets of partitions whose snapshots were expired
// in the table properties.
func TestCommittedAfterExpiry(t *testing.T) {
	cat := newCatalog(t, nil)
	ctx := context.Background()
	tbl, err := cat.Table(ctx, "exp", "exp", mustSchema(t, simpleSchema))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range []int32{0, 1, 0} {
		if err := tbl.Append(ctx, simpleBatch(t, tbl, p, int64(i*10), 2, "o")); err != nil {
			t.Fatal(err)
		}
	}
	tx := tbl.Iceberg().NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(1), table.WithOlderThan(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := tbl.Committed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Iceberg().Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after expiry, want 1", n)
	}
	if c.Offsets[0] != 22 || c.Offsets[1] != 12 {
		t.Errorf("committed %+v, want 0:22 1:12", c.Offsets)
	}
}

func TestPromotionIntToLong(t *testing.T) {
	cat := newCatalog(t, nil)
	ctx := context.Background()
	v1 := `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
	v2 := `{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}`
	tbl, err := cat.Table(ctx, "pr", "pr", mustSchema(t, v1))
	if err != nil {
		t.Fatal(err)
	}
	ts := time.UnixMilli(1714600000000)
	if err := tbl.Append(ctx, Batch{Records: []Record{{Partition: 0, Offset: 0, Timestamp: ts, Value: native(t, tbl.avro, map[string]any{"a": int32(-7)})}}, Offsets: map[int32]int64{0: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Evolve(ctx, mustSchema(t, v2)); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Append(ctx, Batch{Records: []Record{{Partition: 0, Offset: 1, Timestamp: ts, Value: native(t, tbl.avro, map[string]any{"a": int64(1) << 40})}}, Offsets: map[int32]int64{0: 2}}); err != nil {
		t.Fatal(err)
	}
	diffRows(t, []map[string]any{
		{"a": int64(-7), "_kafka": kafkaMeta(0, 0, ts)}, {"a": int64(1) << 40, "_kafka": kafkaMeta(0, 1, ts)},
	}, pyRead(t, cat, "pr"))
}

// When every attempt loses to another writer, Append gives up with
// ErrCommit and none of its records is in the table.
func TestRetriesExhausted(t *testing.T) {
	cat := newCatalog(t, func(c *Config) { c.CommitRetries = 2 })
	ctx := context.Background()
	tbl, peer := tableAndPeer(t, cat, "ex")
	var peerNext int64
	tbl.beforeCommit = func(int) {
		if err := peer.Append(ctx, simpleBatch(t, peer, 1, peerNext, 2, "peer")); err != nil {
			t.Error(err)
		}
		peerNext += 2
	}
	err := tbl.Append(ctx, simpleBatch(t, tbl, 0, 0, 3, "us"))
	if !errors.Is(err, ErrCommit) {
		t.Fatalf("err %v, want ErrCommit", err)
	}
	if cat.Retries() != 2 {
		t.Errorf("%d retries, want 2", cat.Retries())
	}
	c, err := tbl.Committed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Offsets[0]; ok || c.Offsets[1] != peerNext {
		t.Errorf("committed %+v, want only the peer's 1:%d", c.Offsets, peerNext)
	}
	rows, _ := scanCount(t, tbl)
	if rows != peerNext {
		t.Errorf("%d rows, want the peer's %d", rows, peerNext)
	}
}

// metadataFiles counts the manifest lists and manifests under the table's
// metadata directory (a file:// warehouse).
func metadataFiles(t *testing.T, tbl *Table) (lists, manifests int) {
	t.Helper()
	dir := strings.TrimPrefix(tbl.Iceberg().Location(), "file://") + "/metadata"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e.Name(), "snap-"):
			lists++
		case strings.HasSuffix(e.Name(), ".avro"):
			manifests++
		}
	}
	return lists, manifests
}

// A batch larger than one Arrow chunk is written whole in one snapshot.
func TestLargeBatchChunked(t *testing.T) {
	cat := newCatalog(t, nil)
	ctx := context.Background()
	tbl, err := cat.Table(ctx, "big", "big", mustSchema(t, simpleSchema))
	if err != nil {
		t.Fatal(err)
	}
	n := int64(writeChunk + writeChunk/2)
	b := Batch{Offsets: map[int32]int64{0: n}}
	for o := int64(0); o < n; o++ {
		b.Records = append(b.Records, Record{Partition: 0, Offset: o, Timestamp: time.UnixMilli(1714600000000), Value: map[string]any{"a": o * 10}})
	}
	if err := tbl.Append(ctx, b); err != nil {
		t.Fatal(err)
	}
	rows, sum := scanCount(t, tbl)
	if rows != n || sum != 10*n*(n-1)/2 {
		t.Errorf("%d rows, sum %d; want %d, %d", rows, sum, n, 10*n*(n-1)/2)
	}
	if k := len(tbl.Iceberg().Metadata().Snapshots()); k != 1 {
		t.Errorf("%d snapshots, want 1", k)
	}
}

// Two loaders evolving the same table to the same version at once end with
// one new column.
func TestConcurrentEvolution(t *testing.T) {
	cat := newCatalog(t, nil)
	ctx := context.Background()
	v1 := mustSchema(t, simpleSchema)
	v2 := mustSchema(t, `{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":["null","string"],"default":null}]}`)
	var tables [2]*Table
	for i := range tables {
		c, err := Open(ctx, cat.cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if tables[i], err = c.Table(ctx, "ce", "ce", v1); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 2)
	for _, tbl := range tables {
		go func() { errs <- tbl.Evolve(ctx, v2) }()
	}
	for range tables {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := cat.Table(ctx, "ce", "ce", v2)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, f := range tbl.Iceberg().Schema().Fields() {
		names[f.Name]++
	}
	if names["b"] != 1 || len(names) != 3 {
		t.Errorf("columns %v, want a, b, _kafka once each", names)
	}
}

// tableAndPeer opens table name of cat (simpleSchema) twice, the second
// time through a catalog of its own: another writer.
func tableAndPeer(t *testing.T, cat *Catalog, name string) (*Table, *Table) {
	t.Helper()
	ctx := context.Background()
	s := mustSchema(t, simpleSchema)
	tbl, err := cat.Table(ctx, name, name, s)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, cat.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	peer, err := other.Table(ctx, name, name, s)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, peer
}
