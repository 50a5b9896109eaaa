package loader

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/schema"
)

// bucketKey names the output file a record goes to: its time partition
// (an hour unless partition.duration.ms) and schema.
type bucketKey struct {
	hour int64 // Unix seconds of the partition's start
	id   schema.ID
}

// dataFile is one container file being written in the run's temporary
// directory.
type dataFile struct {
	key         bucketKey
	tmp         string
	w           *asyncWriter
	data        fileWriter
	first, last int64
	lastUse     int64
	index       int // in the open-files heap
}

// errorRecord is one line of an _errors file (JSON lines). Frozen.
type errorRecord struct {
	Topic       string            `json:"topic"`
	Partition   int32             `json:"partition"`
	Offset      int64             `json:"offset"`
	TimestampMs int64             `json:"timestamp_ms"`
	Reason      string            `json:"reason"`
	Key         []byte            `json:"key,omitempty"`
	Value       []byte            `json:"value,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
}

type windowKey struct {
	start int64 // ms
}

// partLoad is the loading state of one owned partition: what is committed
// and what the current, uncommitted commit holds.
type partLoad struct {
	l         *Loader
	topic     string
	partition int32
	prev      *Manifest // newest committed; nil before the first commit
	published bool      // prev's audit events confirmed published
	next      int64     // next offset to consume
	end       int64     // stop before this offset (run), or -1 (unbounded)
	endTime   time.Time // when end was read
	runDir    string
	fileSeq   int

	// The current commit.
	first    int64 // -1 when nothing consumed yet
	open     map[bucketKey]*dataFile
	lru      fileHeap
	closed   []*dataFile
	errW     io.WriteCloser
	errEnc   *json.Encoder
	errTmp   string
	errFirst int64
	errLast  int64
	origins  map[string]int64
	gaps     map[string][]OffsetRange
	maxTs    int64
	records  int64
	bytes    int64
	errors   int64
	dups     int64
	windows  map[windowKey]*AuditEvent
	uses     int64
	// ice holds the records of the current commit in
	// table.format=iceberg (nil for Avro files).
	ice *iceLoad
}

func (pl *partLoad) dir() string {
	return partitionDir(pl.l.base, pl.l.cfg.Name, pl.topic, pl.partition)
}

// recoverPartition finishes the newest committed manifest of a partition
// (its moves and audit events), removes every uncommitted temporary file
// and returns the partition's loading state. The caller owns the partition.
func (l *Loader) recoverPartition(ctx context.Context, topic string, p int32) (*partLoad, error) {
	m, seqs, err := latestManifest(l.fsys, l.base, l.cfg.Name, topic, p)
	if err != nil {
		return nil, err
	}
	if err := l.ensurePartitioning(topic); err != nil {
		return nil, err
	}
	pl := &partLoad{l: l, topic: topic, partition: p, end: -1}
	if l.ice != nil {
		// The table is the commit point of every commit with records; a
		// manifest file is newer only for a commit without any (bad
		// records, duplicates, a watermark), whose commit point is its
		// rename as in the Avro mode.
		il, im, err := l.recoverIceberg(ctx, topic, p)
		if err != nil {
			return nil, err
		}
		pl.ice = il
		if im != nil && (m == nil || im.Seq > m.Seq) {
			if err := l.writeManifestCopy(pl, im); err != nil {
				return nil, err
			}
			m = im
		}
	}
	pl.prev = m
	if m != nil {
		if err := l.applyMoves(m); err != nil {
			return nil, err
		}
		ok, err := filesys.Exists(l.fsys, path.Join(manifestsDir(l.base, l.cfg.Name, topic, p), publishedName(m.Seq)))
		if err != nil {
			return nil, err
		}
		pl.published = ok
		if !ok {
			pl.published = l.publishAudit(ctx, pl, m) == nil
		}
		pl.next = m.NextOffset
		l.pruneManifests(pl, seqs)
	}
	// Everything under tmp/ is either moved by now or never committed.
	if err := l.fsys.RemoveAll(tmpDir(l.base, l.cfg.Name, topic, p)); err != nil {
		return nil, fmt.Errorf("remove uncommitted files of %s/%d: %w", topic, p, err)
	}
	pl.runDir = path.Join(tmpDir(l.base, l.cfg.Name, topic, p), l.runID)
	pl.reset()
	return pl, nil
}

func (pl *partLoad) reset() {
	pl.first = -1
	pl.open = map[bucketKey]*dataFile{}
	pl.lru = pl.lru[:0]
	pl.closed = nil
	pl.errW, pl.errEnc, pl.errTmp = nil, nil, ""
	pl.origins = map[string]int64{}
	pl.gaps = map[string][]OffsetRange{}
	if pl.prev != nil {
		maps.Copy(pl.origins, pl.prev.Origins)
		for k, g := range pl.prev.OriginGaps {
			pl.gaps[k] = slices.Clone(g)
		}
		pl.maxTs = pl.prev.MaxTimestampMs
	}
	pl.records, pl.bytes, pl.errors, pl.dups = 0, 0, 0, 0
	pl.windows = map[windowKey]*AuditEvent{}
	if pl.ice != nil {
		pl.ice.reset()
	}
}

// pending reports whether the current commit consumed anything.
func (pl *partLoad) pending() bool { return pl.first >= 0 }

// skip consumes a record that is not data (a transaction marker): its
// offset is passed, nothing lands.
func (pl *partLoad) skip(r *kgo.Record) {
	if pl.first < 0 {
		pl.first = r.Offset
	}
	pl.next = r.Offset + 1
}

// add loads one record (offset order).
func (pl *partLoad) add(ctx context.Context, r *kgo.Record) error {
	if pl.ice != nil {
		// The table takes a new writer schema before anything of the
		// record is counted, so that a type change stops the partition
		// in front of the record.
		if err := pl.useSchema(ctx, r); err != nil {
			return err
		}
	}
	if pl.first < 0 {
		pl.first = r.Offset
	}
	pl.next = r.Offset + 1
	if dup, err := pl.duplicate(r); err != nil {
		return err
	} else if dup {
		pl.dups++
		pl.l.metrics.duplicates.Inc()
		pl.l.progress.dups.Add(1)
		return nil
	}
	ts := r.Timestamp.UnixMilli()
	id, payload, err := schema.Parse(r.Value)
	if err != nil {
		return pl.bad(r, "not framed Avro: "+err.Error())
	}
	sc, err := pl.l.schemas.get(ctx, id)
	if err != nil {
		return err // the registry is unreachable: stop, nothing is committed
	}
	if sc.bad != "" {
		return pl.bad(r, sc.bad)
	}
	if err := sc.parsed.Validate(payload); err != nil {
		return pl.bad(r, fmt.Sprintf("does not decode with schema %d: %v", id, err))
	}
	if pl.ice != nil {
		if reason, err := pl.ice.add(r, pl.partition, id, sc.parsed, payload); err != nil || reason != "" {
			if err != nil {
				return err
			}
			return pl.bad(r, reason)
		}
	} else if err := pl.write(r, id, sc, payload); err != nil {
		return err
	}
	pl.records++
	n := int64(len(r.Key) + len(r.Value))
	pl.bytes += n
	pl.maxTs = max(pl.maxTs, ts)
	w := pl.window(ts)
	w.Count++
	w.Bytes += n
	pl.l.progress.records.Add(1)
	pl.l.progress.bytes.Add(n)
	return nil
}

// write appends a validated record to its Avro data file.
func (pl *partLoad) write(r *kgo.Record, id schema.ID, sc *writerSchema, payload []byte) error {
	f, err := pl.file(bucketKey{hour: r.Timestamp.UTC().Truncate(pl.l.cfg.PartitionDuration).Unix(), id: id}, sc.text, r.Offset)
	if err != nil {
		return err
	}
	if pl.l.columns != nil {
		if payload, err = pl.l.columns.Append(append(make([]byte, 0, len(payload)+64), payload...), pl.columns(r)); err != nil {
			return fmt.Errorf("encode the stored Kafka columns of %s/%d@%d: %w", pl.topic, pl.partition, r.Offset, err)
		}
	}
	if err := f.data.Append(payload); err != nil {
		return fmt.Errorf("write %s: %w", f.tmp, err)
	}
	f.last = r.Offset
	return nil
}

// useSchema evolves the partition's table to the writer schema of r, if
// r is framed with a schema the registry has (other records are bad
// records, which add writes).
func (pl *partLoad) useSchema(ctx context.Context, r *kgo.Record) error {
	id, _, err := schema.Parse(r.Value)
	if err != nil {
		return nil
	}
	sc, err := pl.l.schemas.get(ctx, id)
	if err != nil || sc.bad != "" {
		return err
	}
	return pl.ice.use(ctx, id, sc.parsed)
}

func (pl *partLoad) window(ts int64) *AuditEvent {
	win := pl.l.cfg.AuditWindow.Milliseconds()
	start := ts - ts%win
	if ts%win < 0 {
		start -= win
	}
	w := pl.windows[windowKey{start}]
	if w == nil {
		w = &AuditEvent{Topic: pl.topic, WindowStartMs: start, WindowMs: win}
		pl.windows[windowKey{start}] = w
	}
	return w
}

// bad writes a record that cannot be loaded to the commit's errors file.
func (pl *partLoad) bad(r *kgo.Record, reason string) error {
	if pl.errW == nil {
		pl.errTmp = path.Join(pl.runDir, fmt.Sprintf("errors-%d.jsonl", pl.nextFileSeq()))
		w, err := pl.l.fsys.Create(pl.errTmp)
		if err != nil {
			return fmt.Errorf("create %s: %w", pl.errTmp, err)
		}
		pl.errW, pl.errEnc, pl.errFirst = w, json.NewEncoder(w), r.Offset
	}
	er := errorRecord{Topic: pl.topic, Partition: pl.partition, Offset: r.Offset, TimestampMs: r.Timestamp.UnixMilli(),
		Reason: reason, Key: r.Key, Value: r.Value}
	if len(r.Headers) > 0 {
		er.Headers = map[string]string{}
		for _, h := range r.Headers {
			er.Headers[h.Key] = string(h.Value)
		}
	}
	if err := pl.errEnc.Encode(er); err != nil {
		return fmt.Errorf("write %s: %w", pl.errTmp, err)
	}
	pl.errLast = r.Offset
	pl.errors++
	pl.window(r.Timestamp.UnixMilli()).Errors++
	pl.l.metrics.errors.Inc()
	pl.l.progress.errors.Add(1)
	return nil
}

func (pl *partLoad) nextFileSeq() int { pl.fileSeq++; return pl.fileSeq }

// file returns the open file of a bucket, opening one (and closing the
// least recently used past MaxOpenFiles) as needed.
func (pl *partLoad) file(key bucketKey, schemaText string, offset int64) (*dataFile, error) {
	pl.uses++
	if f := pl.open[key]; f != nil {
		f.lastUse = pl.uses
		heap.Fix(&pl.lru, f.index)
		return f, nil
	}
	if len(pl.open) >= pl.l.cfg.MaxOpenFiles {
		old := heap.Pop(&pl.lru).(*dataFile)
		if err := pl.closeFile(old); err != nil {
			return nil, err
		}
	}
	f := &dataFile{key: key, first: offset, lastUse: pl.uses,
		tmp: path.Join(pl.runDir, strconv.Itoa(pl.nextFileSeq())+pl.l.format.format().Ext())}
	fw, err := pl.l.fsys.Create(f.tmp)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", f.tmp, err)
	}
	w := newAsyncWriter(fw)
	f.w = w
	if f.data, err = pl.l.format.newWriter(w, schemaText); err != nil {
		w.Close()
		return nil, fmt.Errorf("write %s: %w", f.tmp, err)
	}
	pl.open[key] = f
	heap.Push(&pl.lru, f)
	return f, nil
}

func (pl *partLoad) closeFile(f *dataFile) error {
	delete(pl.open, f.key)
	if err := f.finish(); err != nil {
		return err
	}
	pl.closed = append(pl.closed, f)
	return nil
}

// closeAll closes every open file, several at once: on HDFS a close waits
// for the DataNodes' acknowledgements and the NameNode, a round trip per
// file that would otherwise add up.
func (pl *partLoad) closeAll() error {
	files := make([]*dataFile, 0, len(pl.lru))
	for len(pl.lru) > 0 {
		f := heap.Pop(&pl.lru).(*dataFile)
		delete(pl.open, f.key)
		files = append(files, f)
	}
	err := parallel(len(files), func(i int) error { return files[i].finish() })
	pl.closed = append(pl.closed, files...)
	return err
}

func (f *dataFile) finish() error {
	if err := f.data.Close(); err != nil {
		f.w.Close()
		return fmt.Errorf("write %s: %w", f.tmp, err)
	}
	if err := f.w.Close(); err != nil {
		return fmt.Errorf("close %s: %w", f.tmp, err)
	}
	return nil
}

// ioParallelism bounds the file system calls a commit runs at once.
const ioParallelism = 8

// parallel runs fn(0..n-1), ioParallelism at a time, and returns the
// first error.
func parallel(n int, fn func(i int) error) error { return parallelN(n, ioParallelism, fn) }

// parallelN runs fn(0..n-1), at most width at a time, and returns the
// first error once every call returned.
func parallelN(n, width int, fn func(i int) error) error {
	if n == 1 {
		return fn(0)
	}
	errs := make(chan error, n)
	sem := make(chan struct{}, max(width, 1))
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- fn(i)
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// finalName is where a data file lands: by hour (UTC) and with its offset
// range and schema id in the name (package hours).
func (pl *partLoad) finalName(f *dataFile) string {
	name := hours.LoaderFile{Topic: pl.topic, Partition: pl.partition, First: f.first, Last: f.last,
		SchemaID: uint32(f.key.id), Format: pl.l.format.format()}.Name()
	return path.Join(pl.l.layout.Dir(pl.l.base, pl.topic, time.Unix(f.key.hour, 0)), name)
}

// columns are the stored Kafka columns of a record.
func (pl *partLoad) columns(r *kgo.Record) hours.Record {
	c := hours.Record{Key: r.Key, Topic: pl.topic, Partition: pl.partition, Offset: r.Offset}
	for _, h := range r.Headers {
		c.Headers = append(c.Headers, hours.Header{Key: h.Key, Value: h.Value})
	}
	return c
}

// watermarkStep is the least advance of the watermark worth a commit
// that loads nothing.
const watermarkStep = time.Minute

// commit commits the current commit of the partition: see doc.go for the
// protocol and its crash steps. reachedEnd says the partition is loaded up
// to the end offset read at endTime.
func (pl *partLoad) commit(ctx context.Context, reachedEnd bool) error {
	l := pl.l
	if !pl.pending() && !reachedEnd {
		return nil
	}
	start := time.Now()
	var watermark int64
	if pl.prev != nil {
		watermark = pl.prev.WatermarkMs
	}
	watermark = max(watermark, pl.maxTs)
	if reachedEnd {
		watermark = max(watermark, pl.endTime.UnixMilli())
	}
	if !pl.pending() && pl.prev != nil && watermark-pl.prev.WatermarkMs < watermarkStep.Milliseconds() {
		// Nothing consumed: commit only to move the watermark on, and not
		// for every short serve cycle or a peer's partition checked after it.
		return nil
	}
	l.crash(StepWriting)
	if err := pl.closeAll(); err != nil {
		return err
	}
	m := &Manifest{Version: ManifestVersion, Job: l.cfg.Name, Topic: pl.topic, Partition: pl.partition,
		Seq: 1, Run: l.runID, CommittedAt: time.Now().UTC(), FirstOffset: pl.first, NextOffset: pl.next,
		MaxTimestampMs: pl.maxTs, WatermarkMs: watermark, Origins: pl.origins, OriginGaps: pl.gaps,
		Records: pl.records, Bytes: pl.bytes, Errors: pl.errors, Duplicates: pl.dups}
	if pl.prev != nil {
		m.Seq = pl.prev.Seq + 1
	}
	if !pl.pending() {
		m.FirstOffset = pl.next
	}
	for _, f := range pl.closed {
		m.Moves = append(m.Moves, Move{From: f.tmp, To: pl.finalName(f)})
	}
	if pl.errW != nil {
		if err := pl.errW.Close(); err != nil {
			return fmt.Errorf("close %s: %w", pl.errTmp, err)
		}
		m.Moves = append(m.Moves, Move{From: pl.errTmp, To: path.Join(l.base, ErrorsDir, pl.topic,
			fmt.Sprintf("%s+%d+%d+%d.jsonl", pl.topic, pl.partition, pl.errFirst, pl.errLast))})
	}
	if pl.prev != nil && !pl.published {
		m.Audit = append(m.Audit, pl.prev.Audit...) // carried until confirmed
	}
	for _, w := range pl.windows {
		e := *w
		e.ID = fmt.Sprintf("loader/%s/%s/%d/%d-%d/%d", l.cfg.Name, pl.topic, pl.partition, m.FirstOffset, m.NextOffset-1, w.WindowStartMs)
		m.Audit = append(m.Audit, e)
	}
	l.crash(StepFilesClosed)
	if pl.ice != nil && len(pl.ice.records) > 0 {
		if err := pl.commitIceberg(ctx, m); err != nil {
			return err
		}
	} else if err := pl.commitManifest(m); err != nil {
		return err
	}
	if err := l.applyMoves(m); err != nil {
		return err
	}
	l.crash(StepMoved)
	pl.prev = m
	pl.published = l.publishAudit(ctx, pl, m) == nil
	l.crash(StepMarked)
	l.pruneManifests(pl, nil)

	files := int64(len(pl.closed))
	var fileBytes int64
	for _, f := range pl.closed {
		fileBytes += f.w.size
	}
	l.metrics.commits.Inc()
	l.metrics.records.Add(float64(m.Records))
	l.metrics.bytes.Add(float64(m.Bytes))
	l.metrics.files.Add(float64(files))
	l.metrics.fileBytes.Add(float64(fileBytes))
	l.metrics.commitSeconds.Observe(time.Since(start).Seconds())
	l.progress.files.Add(files)
	l.progress.fileBytes.Add(fileBytes)
	l.progress.commit(CommitInfo{Topic: pl.topic, Partition: pl.partition, Seq: m.Seq, FirstOffset: m.FirstOffset,
		NextOffset: m.NextOffset, Records: m.Records, Errors: m.Errors, Duplicates: m.Duplicates, Files: files, FileBytes: fileBytes})
	pl.reset()
	return nil
}

// commitManifest is the Avro mode's commit point (and the Iceberg mode's
// for a commit without records): m written under the run's temporary
// directory, then renamed to manifests/<seq>.json.
func (pl *partLoad) commitManifest(m *Manifest) error {
	l := pl.l
	body, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	tmp := path.Join(pl.runDir, "manifest-"+manifestName(m.Seq))
	if err := filesys.WriteFile(l.fsys, tmp, body); err != nil {
		return fmt.Errorf("write manifest %s: %w", tmp, err)
	}
	l.crash(StepManifestWritten)
	if err := l.checkOwnership(pl.topic, pl.partition); err != nil {
		return err
	}
	mdir := manifestsDir(l.base, l.cfg.Name, pl.topic, pl.partition)
	if pl.prev == nil {
		if err := l.fsys.MkdirAll(mdir); err != nil {
			return err
		}
	}
	// The commit point.
	if err := l.fsys.Rename(tmp, path.Join(mdir, manifestName(m.Seq))); err != nil {
		return fmt.Errorf("commit manifest %s: %w", path.Join(mdir, manifestName(m.Seq)), err)
	}
	l.crash(StepCommitted)
	return nil
}

// applyMoves redoes a committed manifest's renames. A move whose source is
// gone was done: sources live only in temporary directories, which are
// removed only after their manifest's moves are done (a destination that
// is gone too was removed later, e.g. by compaction).
func (l *Loader) applyMoves(m *Manifest) error {
	if len(m.Moves) == 0 {
		return nil
	}
	if err := l.move(m.Moves[0]); err != nil {
		return err
	}
	l.crash(StepFirstMove)
	rest := m.Moves[1:]
	return parallel(len(rest), func(i int) error { return l.move(rest[i]) })
}

// move renames one file of a committed manifest. The rename is tried
// first (one round trip in the usual case); a missing source or
// destination directory is told apart afterwards.
func (l *Loader) move(mv Move) error {
	err := l.fsys.Rename(mv.From, mv.To)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		if err != nil {
			return fmt.Errorf("move %s to %s: %w", mv.From, mv.To, err)
		}
		return nil
	}
	ok, serr := filesys.Exists(l.fsys, mv.From)
	if serr != nil {
		return serr
	}
	if !ok {
		return nil // moved before
	}
	if err := l.fsys.MkdirAll(path.Dir(mv.To)); err != nil {
		return err
	}
	if err := l.fsys.Rename(mv.From, mv.To); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("move %s to %s: %w", mv.From, mv.To, err)
	}
	return nil
}

// publishAudit publishes a committed manifest's audit events and marks
// them published. On failure the events stay pending: the next commit of
// the partition carries them, and recovery re-publishes them.
func (l *Loader) publishAudit(ctx context.Context, pl *partLoad, m *Manifest) error {
	if l.audit == nil || len(m.Audit) == 0 {
		return nil
	}
	if err := l.audit.publish(ctx, m.Audit); err != nil {
		l.log.Warn("audit events not published; they are re-sent with the next commit or run",
			"topic", pl.topic, "partition", pl.partition, "seq", m.Seq, "err", err)
		return err
	}
	l.crash(StepPublished)
	marker := path.Join(manifestsDir(l.base, l.cfg.Name, pl.topic, pl.partition), publishedName(m.Seq))
	if err := filesys.WriteFile(l.fsys, marker, []byte("published\n")); err != nil && !errors.Is(err, fs.ErrExist) {
		l.log.Warn("audit published but not marked; it will be re-sent (the audit service drops the duplicate)", "err", err)
		return err
	}
	return nil
}

// keepManifests is how many committed manifests a partition keeps.
const keepManifests = 3

// pruneManifests removes all but the newest committed manifests (and
// their markers); older ones are never read again.
func (l *Loader) pruneManifests(pl *partLoad, seqs []int64) {
	if pl.prev == nil || pl.prev.Seq <= keepManifests {
		return
	}
	dir := manifestsDir(l.base, l.cfg.Name, pl.topic, pl.partition)
	if seqs == nil {
		seqs = []int64{pl.prev.Seq - keepManifests}
	}
	for _, s := range seqs {
		if s <= pl.prev.Seq-keepManifests {
			_ = l.fsys.Remove(path.Join(dir, manifestName(s)))
			_ = l.fsys.Remove(path.Join(dir, publishedName(s)))
		}
	}
}

// abort discards the current commit: its files stay in the temporary
// directory and are removed by the next recovery.
func (pl *partLoad) abort() {
	for _, f := range pl.open {
		f.w.Close()
	}
	if pl.errW != nil {
		pl.errW.Close()
	}
	pl.open = map[bucketKey]*dataFile{}
	pl.lru = pl.lru[:0]
}

// fileHeap orders open files by last use, least recent first.
type fileHeap []*dataFile

func (h fileHeap) Len() int           { return len(h) }
func (h fileHeap) Less(i, j int) bool { return h[i].lastUse < h[j].lastUse }
func (h fileHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *fileHeap) Push(x any)        { f := x.(*dataFile); f.index = len(*h); *h = append(*h, f) }
func (h *fileHeap) Pop() any {
	old := *h
	f := old[len(old)-1]
	*h = old[:len(old)-1]
	return f
}
