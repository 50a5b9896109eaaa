package icetable

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tributary/tributary/schema/avro"
)

// Snapshot summary and table property keys (frozen: tables written by
// earlier versions are resumed from them).
const (
	// OffsetKeyPrefix + "<partition>" is the next offset of that Kafka
	// partition after the snapshot's data, in decimal.
	OffsetKeyPrefix = "tributary.offsets."
	// OriginKeyPrefix + "<partition>" is the loader's opaque state of that
	// partition after the snapshot's data (its origin high-water marks).
	OriginKeyPrefix = "tributary.origin."
	// TopicKey is the topic the snapshot's records came from.
	TopicKey = "tributary.topic"
)

// Batch is what one Append commits: records and the state the loader
// reaches with them.
type Batch struct {
	Records []Record
	// Offsets is, per Kafka partition, the next offset to read after the
	// batch; it must name every partition of Records.
	Offsets map[int32]int64
	// Origins is, per Kafka partition, the loader's origin high-water
	// marks after the batch, stored as given; a partition without one
	// keeps the one committed before.
	Origins map[int32]string
}

// Committed is what the table holds for its topic.
type Committed struct {
	// Offsets is the next offset per partition; a partition never
	// committed is absent.
	Offsets map[int32]int64
	// Origins is the newest Origins entry per partition.
	Origins map[int32]string
	// SnapshotID is the snapshot Committed read from (0: empty table).
	SnapshotID int64
}

// Table is the Iceberg table of one topic. Its methods are not safe for
// concurrent use; other writers (Spark, a second Table) may commit to the
// same table concurrently.
type Table struct {
	cat   *Catalog
	ident table.Identifier
	topic string
	tbl   *table.Table
	avro  *avro.Schema

	// beforeCommit and afterCommit wrap each commit attempt (tests).
	beforeCommit func(attempt int)
	afterCommit  func(attempt int, err error) error
}

// Iceberg is the table as last loaded.
func (t *Table) Iceberg() *table.Table { return t.tbl }

// Evolve moves the table to Avro schema s (see Catalog.Table).
func (t *Table) Evolve(ctx context.Context, s *avro.Schema) error {
	want, err := icebergSchema(s)
	if err != nil {
		return fmt.Errorf("topic %s: %w", t.topic, err)
	}
	t.avro = s
	return t.evolve(ctx, want)
}

func (t *Table) evolve(ctx context.Context, want *iceberg.Schema) error {
	var last error
	for attempt := 0; attempt <= t.cat.cfg.CommitRetries; attempt++ {
		if attempt > 0 {
			// Another writer changed the table (perhaps the same evolution,
			// by a peer loader): look again.
			if err := t.tbl.Refresh(ctx); err != nil {
				return fmt.Errorf("icetable: evolve table of topic %s: %w", t.topic, err)
			}
		}
		cur := t.tbl.Schema()
		if err := checkTypes(t.topic, cur, want); err != nil {
			return err
		}
		if schemaCovers(cur, want) {
			return nil
		}
		tx := t.tbl.NewTransaction()
		if err := tx.UpdateSchema(true, false).UnionByNameWith(want).Commit(); err != nil {
			return fmt.Errorf("icetable: evolve table of topic %s: %w", t.topic, err)
		}
		tbl, err := tx.Commit(ctx)
		if err == nil {
			t.tbl = tbl
			return nil
		}
		last = err
	}
	return fmt.Errorf("%w: evolve table of topic %s: %w", ErrCommit, t.topic, last)
}

// schemaCovers reports whether every field of want is in cur with the same
// type (by name), so that want needs no schema change.
func schemaCovers(cur, want *iceberg.Schema) bool {
	for _, f := range want.Fields() {
		cf, ok := cur.FindFieldByName(f.Name)
		if !ok || !sameShape(cf.Type, f.Type) {
			return false
		}
	}
	return true
}

func sameShape(cur, want iceberg.Type) bool {
	switch w := want.(type) {
	case *iceberg.StructType:
		c, ok := cur.(*iceberg.StructType)
		if !ok {
			return false
		}
		for _, wf := range w.FieldList {
			i := slices.IndexFunc(c.FieldList, func(f iceberg.NestedField) bool { return f.Name == wf.Name })
			if i < 0 || !sameShape(c.FieldList[i].Type, wf.Type) {
				return false
			}
		}
		return true
	case *iceberg.ListType:
		c, ok := cur.(*iceberg.ListType)
		return ok && sameShape(c.Element, w.Element)
	case *iceberg.MapType:
		c, ok := cur.(*iceberg.MapType)
		return ok && sameShape(c.ValueType, w.ValueType)
	}
	return cur.Equals(want)
}

// Committed reads what the table holds for the topic: per partition, the
// offsets of the newest snapshot (walking from the current one through its
// ancestors) that names it, and the newest origin marks. Partitions whose
// snapshots were expired are read from the table properties, which every
// Append sets in the same commit.
func (t *Table) Committed(ctx context.Context) (Committed, error) {
	if err := t.tbl.Refresh(ctx); err != nil {
		return Committed{}, fmt.Errorf("icetable: refresh table of topic %s: %w", t.topic, err)
	}
	return committedIn(t.tbl.Metadata())
}

func committedIn(meta table.Metadata) (Committed, error) {
	out := Committed{Offsets: map[int32]int64{}, Origins: map[int32]string{}}
	take := func(props iceberg.Properties) error {
		for k, v := range props {
			if ps, ok := strings.CutPrefix(k, OriginKeyPrefix); ok {
				p, err := strconv.ParseInt(ps, 10, 32)
				if err != nil {
					return fmt.Errorf("%w: key %s", ErrSummary, k)
				}
				if _, seen := out.Origins[int32(p)]; !seen {
					out.Origins[int32(p)] = v
				}
				continue
			}
			ps, ok := strings.CutPrefix(k, OffsetKeyPrefix)
			if !ok {
				continue
			}
			p, err := strconv.ParseInt(ps, 10, 32)
			if err != nil {
				return fmt.Errorf("%w: key %s", ErrSummary, k)
			}
			if _, seen := out.Offsets[int32(p)]; seen {
				continue
			}
			o, err := strconv.ParseInt(v, 10, 64)
			if err != nil || o < 0 {
				return fmt.Errorf("%w: %s=%q", ErrSummary, k, v)
			}
			out.Offsets[int32(p)] = o
		}
		return nil
	}
	snap := meta.CurrentSnapshot()
	if snap != nil {
		out.SnapshotID = snap.SnapshotID
	}
	for depth := 0; snap != nil && depth < 1<<20; depth++ {
		if snap.Summary != nil {
			if err := take(snap.Summary.Properties); err != nil {
				return Committed{}, err
			}
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = meta.SnapshotByID(*snap.ParentSnapshotID)
	}
	if err := take(meta.Properties()); err != nil {
		return Committed{}, err
	}
	return out, nil
}

// landed reports whether c already holds every offset of b.
func landed(c Committed, b Batch) bool {
	for p, o := range b.Offsets {
		if c.Offsets[p] < o {
			return false
		}
	}
	return true
}

// Append writes b's records as Parquet data files under the table's
// location and commits them in one append snapshot whose summary holds
// b.Offsets and b.Origins. A commit that conflicts with another writer's,
// or whose outcome is unknown, is retried with the same data files after
// reloading the table, unless the reloaded table shows it landed. A batch
// without records commits nothing.
func (t *Table) Append(ctx context.Context, b Batch) error {
	if len(b.Records) == 0 {
		return nil
	}
	for _, r := range b.Records {
		if o, ok := b.Offsets[r.Partition]; !ok || o <= r.Offset {
			return fmt.Errorf("%w: record %d@%d beyond the batch's next offset %d", ErrValue, r.Partition, r.Offset, o)
		}
	}
	files, err := t.write(ctx, b.Records)
	if err != nil {
		return err
	}
	props := iceberg.Properties{TopicKey: t.topic}
	for p, o := range b.Offsets {
		props[OffsetKeyPrefix+strconv.Itoa(int(p))] = strconv.FormatInt(o, 10)
	}
	for p, o := range b.Origins {
		if _, ok := b.Offsets[p]; !ok {
			return fmt.Errorf("%w: origin marks of partition %d, which the batch does not commit", ErrValue, p)
		}
		props[OriginKeyPrefix+strconv.Itoa(int(p))] = o
	}
	return t.commit(ctx, files, props, b)
}

// writeChunk is the number of records per Arrow record batch: Append
// converts a batch lazily, one chunk at a time, so a large batch is not
// held in memory twice.
const writeChunk = 1 << 16

func (t *Table) write(ctx context.Context, records []Record) ([]iceberg.DataFile, error) {
	sc := t.tbl.Schema()
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("icetable: arrow schema of topic %s: %w", t.topic, err)
	}
	w := rowWriter{schema: sc, avro: t.avro}
	var convErr error
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for from := 0; from < len(records); from += writeChunk {
			rb := array.NewRecordBuilder(memory.DefaultAllocator, asc)
			for _, r := range records[from:min(from+writeChunk, len(records))] {
				if err := w.append(rb, r); err != nil {
					rb.Release()
					convErr = fmt.Errorf("topic %s: %w", t.topic, err)
					yield(nil, convErr)
					return
				}
			}
			rec := rb.NewRecordBatch()
			rb.Release()
			if !yield(rec, nil) {
				return
			}
		}
	}
	var files []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, t.tbl, asc, iter.Seq2[arrow.RecordBatch, error](seq)) {
		if err != nil {
			if convErr != nil {
				return nil, convErr
			}
			return nil, fmt.Errorf("icetable: write data files of topic %s: %w", t.topic, err)
		}
		files = append(files, df)
	}
	if convErr != nil {
		return nil, convErr
	}
	return files, nil
}

func (t *Table) commit(ctx context.Context, files []iceberg.DataFile, props iceberg.Properties, b Batch) error {
	wait := 50 * time.Millisecond
	var last error
	for attempt := 0; attempt <= t.cat.cfg.CommitRetries; attempt++ {
		if attempt > 0 {
			t.cat.retries.Add(1)
			select {
			case <-ctx.Done():
				return errors.Join(ctx.Err(), last)
			case <-time.After(wait):
			}
			wait = min(2*wait, 2*time.Second)
			// Reload, and stop if the previous attempt landed although it
			// reported an error (a lost response).
			if err := t.tbl.Refresh(ctx); err != nil {
				last = err
				continue
			}
			c, err := committedIn(t.tbl.Metadata())
			if err != nil {
				return err
			}
			if landed(c, b) {
				return nil
			}
		}
		last = t.attempt(ctx, attempt, files, props)
		if last == nil {
			return nil
		}
	}
	// The last attempt may have landed too.
	if err := t.tbl.Refresh(ctx); err == nil {
		if c, err := committedIn(t.tbl.Metadata()); err == nil && landed(c, b) {
			return nil
		}
	}
	return fmt.Errorf("%w: topic %s after %d retries: %w", ErrCommit, t.topic, t.cat.cfg.CommitRetries, last)
}

// attempt makes one commit of files on the table as loaded: one CommitTable
// call, with no retry inside (iceberg-go's own retry loop would re-commit
// without the landed check).
func (t *Table) attempt(ctx context.Context, n int, files []iceberg.DataFile, props iceberg.Properties) error {
	tx := t.tbl.NewTransaction()
	if err := tx.SetProperties(withoutTopic(props)); err != nil {
		return err
	}
	if err := tx.AddDataFiles(ctx, files, props, table.WithoutDuplicateCheck()); err != nil {
		return err
	}
	tc, err := tx.TableCommit()
	if err != nil {
		return err
	}
	staged, err := tx.StagedTable()
	if err != nil {
		return err
	}
	if t.beforeCommit != nil {
		t.beforeCommit(n)
	}
	meta, loc, err := t.cat.cat.CommitTable(ctx, t.ident, tc.Requirements, tc.Updates)
	if t.afterCommit != nil {
		err = t.afterCommit(n, err)
	}
	if refused(err) {
		// Refused for certain: the attempt's manifests are garbage (the
		// data files are not: the next attempt commits them).
		t.removeManifests(ctx, staged.CurrentSnapshot())
	}
	if err != nil {
		return err
	}
	tx.MarkCommitted()
	t.tbl = table.New(t.ident, meta, loc, t.tbl.FS, t.cat.cat)
	return nil
}

func withoutTopic(props iceberg.Properties) iceberg.Properties {
	out := maps.Clone(props)
	delete(out, TopicKey)
	return out
}

// removeManifests deletes the manifest list of an uncommitted snapshot and
// the manifests it added; failures only leave garbage for orphan removal.
func (t *Table) removeManifests(ctx context.Context, snap *table.Snapshot) {
	if snap == nil {
		return
	}
	fs, err := t.tbl.FS(ctx)
	if err != nil {
		return
	}
	if ms, err := snap.Manifests(fs); err == nil {
		for _, m := range ms {
			if m.SnapshotID() == snap.SnapshotID {
				fs.Remove(m.FilePath())
			}
		}
	}
	fs.Remove(snap.ManifestList)
}

// refused reports whether a commit error says the catalog refused the
// commit, so that it certainly did not land: ErrCommitFailed (a lost
// compare-and-swap) or a failed requirement, which iceberg-go's catalogs
// return unwrapped, as "requirement failed: ...".
func refused(err error) bool {
	return err != nil && (errors.Is(err, table.ErrCommitFailed) ||
		strings.Contains(strings.ToLower(err.Error()), "requirement failed:"))
}
