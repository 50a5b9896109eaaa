package compact

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/xitongsys/parquet-go-source/writerfile"
	"github.com/xitongsys/parquet-go/parquet"
	"github.com/xitongsys/parquet-go/writer"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/jobs/hours"
)

// Defaults of Config.
const (
	DefaultDelay          = 10 * time.Minute
	DefaultTargetFileSize = 128 << 20
	DefaultCodec          = "zstd"
)

// flushRows is how many decoded rows a Parquet writer holds before shredding them.
const flushRows = 4096

// EnvCrashAt, set to N > 0, makes a compaction SIGKILL its own process at
// its N-th file-system step: the crash-injection tests' hook.
const EnvCrashAt = "TRIBUTARY_COMPACT_CRASH_AT"

// Config configures a compaction run. Zero values mean defaults.
type Config struct {
	// FS and Base locate the loader's output (filesys.Open). Required.
	FS   filesys.FS
	Base string
	// Topics to compact; empty means every topic directory under Base.
	Topics []string
	// ClosedThrough reports how far the loader has committed
	// (loader.CommittedThrough); an hour is closed, and compacted, once
	// ClosedThrough >= its end + Delay. Required.
	ClosedThrough func(ctx context.Context) (time.Time, error)
	// Delay waits for late records past an hour's end. Default DefaultDelay.
	Delay time.Duration
	// Codec is "zstd" (default) or "snappy".
	Codec string
	// TargetFileSize is the approximate size of each Parquet file; an
	// hour with more data gets several. Default DefaultTargetFileSize.
	TargetFileSize int64
	// CrashAt > 0 SIGKILLs the process at that file-system step (tests).
	CrashAt int
	Logger  *slog.Logger
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.FS == nil || c.Base == "" {
		errs = append(errs, fmt.Errorf("%w: FS and Base are required", ErrBadConfig))
	}
	if c.ClosedThrough == nil {
		errs = append(errs, fmt.Errorf("%w: ClosedThrough is required", ErrBadConfig))
	}
	if c.Delay < 0 {
		errs = append(errs, fmt.Errorf("%w: negative delay", ErrBadConfig))
	}
	if c.Codec != "" && c.Codec != "snappy" && c.Codec != "zstd" {
		errs = append(errs, fmt.Errorf("%w: codec %q: want zstd or snappy", ErrBadConfig, c.Codec))
	}
	if c.TargetFileSize < 0 {
		errs = append(errs, fmt.Errorf("%w: negative target file size", ErrBadConfig))
	}
	return errors.Join(errs...)
}

// Summary is what a run did; it is the job's summary in the history.
type Summary struct {
	ClosedThrough  time.Time `json:"closed_through"`
	HoursCompacted int       `json:"hours_compacted"`
	HoursRecovered int       `json:"hours_recovered"`
	// HoursOpen counts hours not compacted yet because they are not closed.
	HoursOpen int      `json:"hours_open"`
	FilesIn   int      `json:"files_in"`
	FilesOut  int      `json:"files_out"`
	BytesIn   int64    `json:"bytes_in"`
	BytesOut  int64    `json:"bytes_out"`
	Records   int64    `json:"records"`
	LateFiles int      `json:"late_files,omitempty"`
	Hours     []string `json:"hours,omitempty"`
	// HoursFailed lists the hours whose compaction failed, with the error.
	HoursFailed []string `json:"hours_failed,omitempty"`
}

// Compactor runs compactions; one at a time per base (the scheduler's job
// lock guarantees that for scheduled runs).
type Compactor struct {
	cfg   Config
	log   *slog.Logger
	steps int
}

// New returns a Compactor.
func New(cfg Config) (*Compactor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Delay == 0 {
		cfg.Delay = DefaultDelay
	}
	if cfg.Codec == "" {
		cfg.Codec = DefaultCodec
	}
	if cfg.TargetFileSize == 0 {
		cfg.TargetFileSize = DefaultTargetFileSize
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Compactor{cfg: cfg, log: log}, nil
}

// step counts a file-system mutation; the crash hook fires at CrashAt.
func (c *Compactor) step(what string) {
	c.steps++
	if c.cfg.CrashAt > 0 && c.steps == c.cfg.CrashAt {
		c.log.Warn("crash injection: SIGKILL", "step", c.steps, "at", what)
		_ = syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered asynchronously
	}
}

// Run first finishes or undoes whatever an earlier, crashed run left in any
// hour, then compacts every closed hour that is not compacted yet.
func (c *Compactor) Run(ctx context.Context) (Summary, error) {
	var sum Summary
	c.steps = 0
	closed, err := c.cfg.ClosedThrough(ctx)
	if err != nil {
		return sum, fmt.Errorf("compact: closed-hour watermark: %w", err)
	}
	sum.ClosedThrough = closed
	topics := c.cfg.Topics
	if len(topics) == 0 {
		if topics, err = hours.Topics(c.cfg.FS, c.cfg.Base); err != nil {
			return sum, err
		}
	}
	for _, topic := range topics {
		list, err := hours.List(c.cfg.FS, c.cfg.Base, topic)
		if err != nil {
			return sum, err
		}
		for _, h := range list {
			if err := ctx.Err(); err != nil {
				return sum, err
			}
			recovered, err := c.recover(h)
			if err != nil {
				return sum, fmt.Errorf("compact: recover %s: %w", h, err)
			}
			if recovered {
				sum.HoursRecovered++
			}
			if h.End().Add(c.cfg.Delay).After(closed) {
				sum.HoursOpen++
				continue
			}
			if err := c.compactHour(ctx, h, &sum); err != nil {
				if ctx.Err() != nil {
					return sum, err
				}
				// One bad hour (a corrupt file, an unmappable schema) must
				// not hold the others back; it stays Avro and the run fails.
				c.log.Error("compaction of an hour failed; it stays Avro", "hour", h.String(), "err", err)
				sum.HoursFailed = append(sum.HoursFailed, h.String()+": "+err.Error())
			}
		}
	}
	if len(sum.HoursFailed) > 0 {
		return sum, fmt.Errorf("compact: %d hours failed: %s", len(sum.HoursFailed), strings.Join(sum.HoursFailed, "; "))
	}
	return sum, nil
}

func (c *Compactor) exists(name string) (bool, error) { return filesys.Exists(c.cfg.FS, name) }

// recover brings an hour to a clean state: committed (marker present) means
// finish deleting inputs and staging; otherwise drop every staged output.
// Reports whether there was anything to do.
func (c *Compactor) recover(h hours.Hour) (bool, error) {
	fsys := c.cfg.FS
	did := false
	m, err := hours.ReadManifest(fsys, h.Dir)
	if err != nil {
		return false, err
	}
	if ok, err := c.exists(path.Join(h.Dir, hours.MarkerTmp)); err != nil {
		return false, err
	} else if ok {
		if err := fsys.Remove(path.Join(h.Dir, hours.MarkerTmp)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		c.step("remove " + hours.MarkerTmp)
		did = true
	}
	if m != nil {
		for _, in := range m.Inputs {
			err := fsys.Remove(path.Join(h.Dir, in.Name))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return did, err
			}
			c.step("recover: remove input " + in.Name)
			did = true
		}
	} else {
		list, err := fsys.ReadDir(h.Dir)
		if err != nil {
			return did, err
		}
		for _, fi := range list {
			if _, err := hours.ParseCompactedFile(fi.Name()); err == nil && !fi.IsDir() {
				if err := fsys.Remove(path.Join(h.Dir, fi.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return did, err
				}
				c.step("recover: remove staged " + fi.Name())
				did = true
			}
		}
	}
	if ok, err := c.exists(path.Join(h.Dir, hours.TmpDir)); err != nil {
		return did, err
	} else if ok {
		if err := fsys.RemoveAll(path.Join(h.Dir, hours.TmpDir)); err != nil {
			return did, err
		}
		c.step("recover: remove " + hours.TmpDir)
		did = true
	}
	return did, nil
}

// input is one Avro file of an hour.
type input struct {
	file    hours.LoaderFile
	name    string
	size    int64
	schema  string
	records int64
}

// compactHour turns a closed, uncompacted hour's Avro files into Parquet.
// The steps, each a crash point: write the outputs in _compact_tmp; move
// them into the hour (ignored by readers while there is no marker); write
// _compacted.tmp and rename it to _compacted, the commit point; delete the
// inputs; remove _compact_tmp.
func (c *Compactor) compactHour(ctx context.Context, h hours.Hour, sum *Summary) error {
	fsys := c.cfg.FS
	m, err := hours.ReadManifest(fsys, h.Dir)
	if err != nil {
		return err
	}
	list, err := fsys.ReadDir(h.Dir)
	if err != nil {
		return err
	}
	var ins []*input
	for _, fi := range list {
		if lf, err := hours.ParseLoaderFile(fi.Name()); err == nil && !fi.IsDir() && lf.Format == hours.Avro {
			ins = append(ins, &input{file: lf, name: fi.Name(), size: fi.Size()})
		}
	}
	if m != nil {
		// Already compacted; Avro files here now came late. They stay
		// visible (the reader rule) and are reported.
		sum.LateFiles += len(ins)
		return nil
	}
	if len(ins) == 0 {
		return nil
	}
	sortInputs(ins)
	// Group by writer schema, in order of first appearance: one set of
	// Parquet files per schema (see doc.go).
	for _, in := range ins {
		s, err := c.readSchema(path.Join(h.Dir, in.name))
		if err != nil {
			return err
		}
		in.schema = s
	}
	var groups [][]*input
	bySchema := map[string]int{}
	for _, in := range ins {
		i, ok := bySchema[in.schema]
		if !ok {
			i = len(groups)
			bySchema[in.schema] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], in)
	}
	tmp := path.Join(h.Dir, hours.TmpDir)
	if err := fsys.MkdirAll(tmp); err != nil {
		return err
	}
	var outs []hours.File
	for _, g := range groups {
		o, err := c.writeGroup(ctx, h, tmp, g)
		if err != nil {
			return err
		}
		outs = append(outs, o...)
	}
	for _, o := range outs {
		if err := fsys.Rename(path.Join(tmp, o.Name), path.Join(h.Dir, o.Name)); err != nil {
			return err
		}
		c.step("move " + o.Name)
	}
	man := hours.Manifest{Version: hours.ManifestVersion, CompactedAt: time.Now().UTC(), Outputs: outs}
	var recs int64
	for _, in := range ins {
		man.Inputs = append(man.Inputs, hours.File{Name: in.name, Size: in.size, Records: in.records, SchemaID: in.schemaID()})
		recs += in.records
	}
	data, _ := json.MarshalIndent(man, "", "  ")
	if err := filesys.WriteFile(fsys, path.Join(h.Dir, hours.MarkerTmp), data); err != nil {
		return err
	}
	c.step("write " + hours.MarkerTmp)
	if err := fsys.Rename(path.Join(h.Dir, hours.MarkerTmp), path.Join(h.Dir, hours.Marker)); err != nil {
		return err
	}
	c.step("commit " + hours.Marker)
	for _, in := range ins {
		if err := fsys.Remove(path.Join(h.Dir, in.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		c.step("remove input " + in.name)
		sum.BytesIn += in.size
	}
	if err := fsys.RemoveAll(tmp); err != nil {
		return err
	}
	c.step("remove " + hours.TmpDir)
	sum.HoursCompacted++
	sum.FilesIn += len(ins)
	sum.FilesOut += len(outs)
	sum.Records += recs
	for _, o := range outs {
		sum.BytesOut += o.Size
	}
	sum.Hours = append(sum.Hours, h.String())
	c.log.Info("compacted hour", "hour", h.String(), "avro_files", len(ins), "parquet_files", len(outs), "records", recs)
	return nil
}

func (in *input) schemaID() string { return strconv.FormatUint(uint64(in.file.SchemaID), 10) }

// sortInputs orders loader files by partition then first offset, so rows
// keep each partition's order.
func sortInputs(ins []*input) {
	sort.SliceStable(ins, func(i, j int) bool {
		a, b := ins[i].file, ins[j].file
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		if a.First != b.First {
			return a.First < b.First
		}
		return ins[i].name < ins[j].name
	})
}

func (c *Compactor) readSchema(name string) (string, error) {
	f, err := c.cfg.FS.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	r, err := goavro.NewOCFReader(bufio.NewReader(f))
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return r.Codec().Schema(), nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// parquetFile is one output being written.
type parquetFile struct {
	name string
	wc   io.WriteCloser
	buf  *bufio.Writer
	cw   *countingWriter
	pw   *writer.ParquetWriter
	rows int64
}

// writeGroup writes the Parquet files of one schema group into tmp,
// starting a new file when the current one reaches the target size.
func (c *Compactor) writeGroup(ctx context.Context, h hours.Hour, tmp string, g []*input) ([]hours.File, error) {
	root, m, err := c.mapping(g[0].schema)
	if err != nil {
		return nil, err
	}
	jsonSchema := m.jsonSchema(root)
	var outs []hours.File
	var cur *parquetFile
	open := func() error {
		name := hours.CompactedFile{Topic: h.Topic, SchemaID: g[0].file.SchemaID, Seq: len(outs)}.Name()
		wc, err := c.cfg.FS.Create(path.Join(tmp, name))
		if err != nil {
			return err
		}
		buf := bufio.NewWriterSize(wc, 1<<20)
		cw := &countingWriter{w: buf}
		pw, err := writer.NewParquetWriter(writerfile.NewWriterFile(cw), jsonSchema, 1)
		if err != nil {
			wc.Close()
			return fmt.Errorf("%w: %v", ErrUnsupportedSchema, err)
		}
		sh := &shredder{root: root, leaves: m.leaves, pw: pw}
		pw.MarshalFunc = sh.marshal
		pw.CompressionType = parquet.CompressionCodec_SNAPPY
		if c.cfg.Codec == "zstd" {
			pw.CompressionType = parquet.CompressionCodec_ZSTD
		}
		pw.RowGroupSize = min(c.cfg.TargetFileSize, 64<<20)
		pw.PageSize = 1 << 20
		cur = &parquetFile{name: name, wc: wc, buf: buf, cw: cw, pw: pw}
		return nil
	}
	closeCur := func() error {
		if err := cur.pw.WriteStop(); err != nil {
			cur.wc.Close()
			return err
		}
		if err := cur.buf.Flush(); err != nil {
			cur.wc.Close()
			return err
		}
		if err := cur.wc.Close(); err != nil {
			return err
		}
		c.step("write " + cur.name)
		outs = append(outs, hours.File{Name: cur.name, Size: cur.cw.n, Records: cur.rows, SchemaID: g[0].schemaID()})
		cur = nil
		return nil
	}
	for _, in := range g {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := c.copyRows(path.Join(h.Dir, in.name), func(rec any) error {
			if cur == nil {
				if err := open(); err != nil {
					return err
				}
			}
			if err := cur.pw.Write(rec); err != nil {
				return err
			}
			cur.rows++
			// parquet-go buffers rows until its size estimate, which counts
			// a goavro value's fields as 4 bytes each, reaches pages times
			// columns: far too many decoded maps at once. Shredding every
			// flushRows rows bounds the memory (pages stay buffered,
			// compressed, until a row group is full).
			if cur.rows%flushRows == 0 {
				if err := cur.pw.Flush(false); err != nil {
					return err
				}
			}
			// Buffered rows count uncompressed (parquet-go's estimate), so a file
			// closes at or somewhat below the target.
			if cur.cw.n+cur.pw.Size+cur.pw.ObjsSize >= c.cfg.TargetFileSize {
				return closeCur()
			}
			return nil
		})
		if err != nil {
			if cur != nil {
				cur.wc.Close()
			}
			return nil, fmt.Errorf("%s: %w", in.name, err)
		}
		in.records = n
	}
	if cur != nil {
		if err := closeCur(); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

func (c *Compactor) mapping(schema string) (*node, *mapper, error) {
	var s any
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		return nil, nil, err
	}
	m := &mapper{named: map[string]any{}}
	root, err := m.build(s, "", "parquet_go_root", 0, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnsupportedSchema, err)
	}
	if root.kind != kindRecord {
		return nil, nil, fmt.Errorf("%w: the top-level type is not a record", ErrUnsupportedSchema)
	}
	return root, m, nil
}

// copyRows decodes an Avro file and hands each record to fn.
func (c *Compactor) copyRows(name string, fn func(any) error) (int64, error) {
	f, err := c.cfg.FS.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r, err := goavro.NewOCFReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return 0, err
	}
	var n int64
	for r.Scan() {
		rec, err := r.Read()
		if err != nil {
			return n, err
		}
		if err := fn(rec); err != nil {
			return n, err
		}
		n++
	}
	return n, r.Err()
}
