package loader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/icetable"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/schema"
	"github.com/tributary/tributary/schema/avro"
)

// The table.format=iceberg mode (doc.go, "Iceberg tables"): a partition's
// records go to its topic's Iceberg table, and the commit's manifest —
// offsets, origin marks, audit events, the _errors move — travels in the
// same catalog commit, as the partition's opaque origin state
// (icetable.Batch.Origins). Everything after the commit point is the Avro
// mode's code.

// emptyRecord opens an existing table without changing its schema (its
// fields are all in any table), to read what it committed before the first
// record says which schema to evolve to.
var emptyRecord = func() *avro.Schema {
	s, err := avro.Parse(`{"type":"record","name":"tributary_resume","fields":[]}`)
	if err != nil {
		panic(err)
	}
	return s
}()

// TableName is the Iceberg table name of a topic: lower case, with '.' and
// '-' as '_' (names Spark and the Hive Metastore take unquoted).
func TableName(topic string) string {
	return strings.NewReplacer(".", "_", "-", "_").Replace(strings.ToLower(topic))
}

// iceLoad is the Iceberg side of one partition's load: its table (nil
// until it exists) and the records of the current commit, each decoded
// with its writer schema and resolved to the table's at commit.
type iceLoad struct {
	cat   *icetable.Catalog
	topic string
	tbl   *icetable.Table
	lock  func(topic string) func()
	// reader is the newest writer schema seen (the highest registry id):
	// the table's Avro schema, to which older writers' records are
	// resolved (an added field gets its default).
	readerID schema.ID
	reader   *avro.Schema
	evolved  map[schema.ID]bool
	resolved map[schema.ID]*avro.Resolver

	records []icetable.Record
	ids     []schema.ID
}

// iceLock serialises a process's calls on a topic's table: one Append per
// table at a time (the job's partitions of a topic would otherwise
// conflict on every commit, each conflict a retry with a reload), and,
// with a Hive catalog, every call (iceberg-go's Hive catalog shares one
// Thrift connection that concurrent calls hang on). It returns the unlock.
func (l *Loader) iceLock(topic string) func() {
	key := topic
	if l.cfg.Iceberg.Type == icetable.CatalogHive {
		key = ""
	}
	mu, _ := l.iceCommits.LoadOrStore(key, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}

// recoverIceberg reads what the partition's table committed: the manifest
// of the newest snapshot naming the partition (nil if none), and the
// partition's iceLoad.
func (l *Loader) recoverIceberg(ctx context.Context, topic string, p int32) (*iceLoad, *Manifest, error) {
	il := &iceLoad{cat: l.ice, topic: topic, lock: l.iceLock, evolved: map[schema.ID]bool{}, resolved: map[schema.ID]*avro.Resolver{}}
	unlock := l.iceLock(topic)
	defer unlock()
	ident := catalog.ToIdentifier(l.cfg.Iceberg.Namespace, TableName(topic))
	if _, err := l.ice.Iceberg().LoadTable(ctx, ident); errors.Is(err, catalog.ErrNoSuchTable) {
		return il, nil, nil
	} else if err != nil {
		return nil, nil, fmt.Errorf("iceberg table of %s: %w", topic, err)
	}
	tbl, err := l.ice.Table(ctx, topic, TableName(topic), emptyRecord)
	if err != nil {
		return nil, nil, err
	}
	il.tbl = tbl
	c, err := tbl.Committed(ctx)
	if err != nil {
		return nil, nil, err
	}
	state, ok := c.Origins[p]
	if !ok {
		if _, has := c.Offsets[p]; has {
			return nil, nil, fmt.Errorf("%w: iceberg table of %s commits partition %d without the loader's state", ErrCorruptManifest, topic, p)
		}
		return il, nil, nil
	}
	var m Manifest
	if err := json.Unmarshal([]byte(state), &m); err != nil || m.Version != ManifestVersion || m.Topic != topic || m.Partition != p {
		return nil, nil, fmt.Errorf("%w: iceberg table of %s, partition %d: the snapshot's %s%d is not this loader's manifest (%v)",
			ErrCorruptManifest, topic, p, icetable.OriginKeyPrefix, p, err)
	}
	if m.NextOffset != c.Offsets[p] {
		return nil, nil, fmt.Errorf("%w: iceberg table of %s, partition %d: offset %d, manifest %d",
			ErrCorruptManifest, topic, p, c.Offsets[p], m.NextOffset)
	}
	return il, &m, nil
}

// use makes the table hold writer schema id before a record of it is
// added: it creates the table, or evolves it (adding the fields id adds);
// a type change fails with icetable.ErrTypeChange and changes nothing.
func (il *iceLoad) use(ctx context.Context, id schema.ID, s *avro.Schema) error {
	if il.evolved[id] {
		return nil
	}
	unlock := il.lock(il.topic)
	defer unlock()
	switch {
	case il.tbl == nil:
		tbl, err := il.cat.Table(ctx, il.topic, TableName(il.topic), s)
		if err != nil {
			return err
		}
		il.tbl = tbl
	default:
		if err := il.tbl.Evolve(ctx, s); err != nil {
			return err
		}
	}
	if il.reader == nil || id > il.readerID {
		il.reader, il.readerID = s, id
	} else if err := il.tbl.Evolve(ctx, il.reader); err != nil { // back to the reader: no commit
		return err
	}
	il.evolved[id] = true
	return nil
}

// add decodes a validated payload of writer schema id into the commit;
// it returns the reason when the payload does not decode.
func (il *iceLoad) add(r *kgo.Record, partition int32, id schema.ID, s *avro.Schema, payload []byte) (string, error) {
	v, _, err := s.Codec().NativeFromBinary(payload)
	if err != nil {
		return fmt.Sprintf("does not decode with schema %d: %v", id, err), nil
	}
	il.records = append(il.records, icetable.Record{Partition: partition, Offset: r.Offset, Timestamp: r.Timestamp, Value: v})
	il.ids = append(il.ids, id)
	return "", nil
}

// batch resolves the commit's records to the reader schema.
func (il *iceLoad) batch(reg func(schema.ID) *avro.Schema) ([]icetable.Record, error) {
	for i, id := range il.ids {
		if id == il.readerID {
			continue
		}
		rs := il.resolved[id]
		if rs == nil {
			var err error
			if rs, err = avro.NewResolver(il.reader, reg(id)); err != nil {
				return nil, fmt.Errorf("%w: topic %s: schema %d read as %d: %w", icetable.ErrTypeChange, il.topic, id, il.readerID, err)
			}
			il.resolved[id] = rs
		}
		v, err := rs.Resolve(il.records[i].Value)
		if err != nil {
			return nil, fmt.Errorf("topic %s: resolve %d@%d: %w", il.topic, il.records[i].Partition, il.records[i].Offset, err)
		}
		// A column the writer lacks is null, not the reader's default: as
		// Iceberg reads a column added after a data file, and whichever
		// schema versions shared the record's commit.
		if m, ok := v.(map[string]any); ok {
			for _, f := range il.reader.Root.Fields {
				if !hasField(reg(id), f.Name) {
					delete(m, f.Name)
				}
			}
		}
		il.records[i].Value = v
	}
	return il.records, nil
}

func hasField(s *avro.Schema, name string) bool {
	for _, f := range s.Root.Fields {
		if f.Name == name {
			return true
		}
	}
	return false
}

func (il *iceLoad) reset() { il.records, il.ids = il.records[:0], il.ids[:0] }

// commitIceberg is the commit point of a commit with records: one
// Table.Append of the records with the partition's next offset and m as
// its origin state. m is copied into manifests/ afterwards (see
// writeManifestCopy).
func (pl *partLoad) commitIceberg(ctx context.Context, m *Manifest) error {
	l := pl.l
	recs, err := pl.ice.batch(func(id schema.ID) *avro.Schema {
		s, _ := l.schemas.get(ctx, id) // cached: the record was added with it
		return s.parsed
	})
	if err != nil {
		return err
	}
	state, err := json.Marshal(m)
	if err != nil {
		return err
	}
	l.crash(StepManifestWritten)
	if err := l.checkOwnership(pl.topic, pl.partition); err != nil {
		return err
	}
	unlock := l.iceLock(pl.topic)
	defer unlock()
	start := time.Now()
	err = pl.ice.tbl.Append(ctx, icetable.Batch{Records: recs,
		Offsets: map[int32]int64{pl.partition: m.NextOffset}, Origins: map[int32]string{pl.partition: string(state)}})
	l.metrics.icebergCommitSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		return fmt.Errorf("iceberg commit of %s/%d: %w", pl.topic, pl.partition, err)
	}
	l.crash(StepCommitted)
	return l.writeManifestCopy(pl, m)
}

// writeManifestCopy puts an Iceberg-committed manifest into the
// partition's manifests/ as the Avro mode's commit would, so that the
// published markers, pruning, States and CommittedThrough work alike. The
// table stays the authority: recovery takes the newer of the two.
func (l *Loader) writeManifestCopy(pl *partLoad, m *Manifest) error {
	body, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	mdir := manifestsDir(l.base, l.cfg.Name, pl.topic, pl.partition)
	if err := l.fsys.MkdirAll(mdir); err != nil {
		return err
	}
	// Under tmp/, which recovery empties: a crash leaves nothing behind.
	tmp := path.Join(tmpDir(l.base, l.cfg.Name, pl.topic, pl.partition), l.runID, "copy-"+manifestName(m.Seq))
	if err := filesys.WriteFile(l.fsys, tmp, body); err != nil {
		return fmt.Errorf("write manifest copy %s: %w", tmp, err)
	}
	if err := l.fsys.Rename(tmp, path.Join(mdir, manifestName(m.Seq))); err != nil {
		return fmt.Errorf("write manifest copy %s: %w", path.Join(mdir, manifestName(m.Seq)), err)
	}
	return nil
}
