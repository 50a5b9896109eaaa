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
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/xitongsys/parquet-go-source/writerfile"
	"github.com/xitongsys/parquet-go/parquet"
	"github.com/xitongsys/parquet-go/writer"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
)

// Defaults of Config.
const (
	DefaultDelay          = 10 * time.Minute
	DefaultTargetFileSize = 128 << 20
	DefaultCodec          = "zstd"
	DefaultThreshold      = 1.0
	DefaultTimeout        = 24 * time.Hour
)

// The values of Config.TimestampType.
const (
	TimestampINT96 = "INT96"
	TimestampINT64 = "INT64"
)

// ParseTimestampType reads a Parquet timestamp type as the CLI and job
// args give it ("INT96" or "INT64", any case); "" is the default, INT96.
func ParseTimestampType(s string) (string, error) {
	switch t := strings.ToUpper(strings.TrimSpace(s)); t {
	case "", TimestampINT96:
		return TimestampINT96, nil
	case TimestampINT64:
		return t, nil
	}
	return "", fmt.Errorf("%w: parquet timestamp type %q: want INT96 or INT64", ErrInvalidConfig, s)
}

// flushRows is how many decoded rows a Parquet writer holds before shredding them.
const flushRows = 4096

// EnvCrashAt, set to N > 0, makes a compaction SIGKILL its own process at
// its N-th file-system step: the crash-injection tests' hook.
const EnvCrashAt = "TRIBUTARY_COMPACT_CRASH_AT"

// EnvPauseAt, set to "STEP:FILE", makes a compaction stop after each
// step named STEP (as its debug log names them, e.g. "commit _compacted"),
// write "N STEP" into FILE.paused and wait until FILE exists, then remove
// both and go on: the tests' hook to query a table while a swap is in
// progress.
const EnvPauseAt = "TRIBUTARY_COMPACT_PAUSE_AT"

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
	// TimestampType is the Parquet type of Avro timestamp-millis:
	// TimestampINT96 (default; what Hive's Parquet reader, Spark's path to
	// a Hive table's partitions, reads) or TimestampINT64 (INT64
	// TIMESTAMP(MILLIS, UTC-adjusted), delta-encoded: the spec's choice and
	// about a quarter of INT96's bytes, for files read only by native
	// Parquet readers; see doc.go).
	TimestampType string
	// TargetFileSize is the approximate size of each Parquet file; an
	// hour with more data gets several. Default DefaultTargetFileSize.
	TargetFileSize int64
	// SortBy gives topics a sort key (topic -> columns, top-level fields
	// of the value record): the rows of each of their Parquet files are
	// ordered by it, nulls first, ties in input order (see doc.go). A key
	// is a property of the data, so the operator's choice; a column the
	// hour's schema lacks fails the hour with ErrInvalidConfig. Topics without
	// one keep the input order.
	SortBy map[string][]string
	// SortBufferBytes bounds the rows held for sorting, estimated as
	// decoded: a file with more rows holds sorted runs of about this
	// size. Default DefaultSortBufferBytes.
	SortBufferBytes int64
	// Audit gives the audit service's producer and loader counts; a closed
	// hour becomes ready once they prove it complete (see doc.go). Nil: a
	// closed hour is ready at once (basis "unaudited").
	Audit hours.Audit
	// Threshold is completeness.threshold: the loader tier's count must be
	// at least Threshold x the producer's in every audit window overlapping
	// the hour. Default 1.0 (Gobblin uses 0.999).
	Threshold float64
	// Timeout is completeness.timeout: past an hour's end plus Timeout a
	// closed hour the audit does not prove complete is published
	// ready-incomplete with its shortfall. Default DefaultTimeout.
	Timeout time.Duration
	// Catalog receives the published partitions (the ready hours, at their
	// locations) after each change; nil: no table catalog.
	Catalog hours.Catalog
	// Now is the clock (default time.Now).
	Now func() time.Time
	// CrashAt > 0 SIGKILLs the process at that file-system step (tests).
	CrashAt int
	// PauseAt stops the run after each step of that name until PauseFile
	// exists (EnvPauseAt; a local file; tests).
	PauseAt   string
	PauseFile string
	Logger    *slog.Logger
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.FS == nil || c.Base == "" {
		errs = append(errs, fmt.Errorf("%w: FS and Base are required", ErrInvalidConfig))
	}
	if c.ClosedThrough == nil {
		errs = append(errs, fmt.Errorf("%w: ClosedThrough is required", ErrInvalidConfig))
	}
	if c.Delay < 0 {
		errs = append(errs, fmt.Errorf("%w: negative delay", ErrInvalidConfig))
	}
	if c.Codec != "" && c.Codec != "snappy" && c.Codec != "zstd" {
		errs = append(errs, fmt.Errorf("%w: codec %q: want zstd or snappy", ErrInvalidConfig, c.Codec))
	}
	if c.TimestampType != "" && c.TimestampType != TimestampINT96 && c.TimestampType != TimestampINT64 {
		errs = append(errs, fmt.Errorf("%w: timestamp type %q: want INT96 or INT64", ErrInvalidConfig, c.TimestampType))
	}
	if c.TargetFileSize < 0 {
		errs = append(errs, fmt.Errorf("%w: negative target file size", ErrInvalidConfig))
	}
	if err := validateSortBy(c.SortBy); err != nil {
		errs = append(errs, err)
	}
	if c.SortBufferBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: negative sort buffer size", ErrInvalidConfig))
	}
	if c.Threshold < 0 || c.Threshold > 1 {
		errs = append(errs, fmt.Errorf("%w: completeness.threshold %v: want a fraction in (0, 1]", ErrInvalidConfig, c.Threshold))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("%w: negative completeness.timeout", ErrInvalidConfig))
	}
	return errors.Join(errs...)
}

// Summary is what a run did; it is the job's summary in the history.
type Summary struct {
	ClosedThrough  time.Time `json:"closed_through"`
	HoursCompacted int       `json:"hours_compacted"`
	HoursRecovered int       `json:"hours_recovered"`
	// HoursOpen counts hours not compacted yet because they are not ready.
	HoursOpen int `json:"hours_open"`
	// HoursReady lists the hours that became ready in this run, and
	// HoursIncomplete those published ready-incomplete (with shortfalls).
	HoursReady      []string `json:"hours_ready,omitempty"`
	HoursIncomplete []string `json:"hours_incomplete,omitempty"`
	// HoursRecompacted counts compacted hours whose late files were merged
	// into a new generation (or moved out of the old mixed layout).
	HoursRecompacted int `json:"hours_recompacted,omitempty"`
	// CatalogErrors lists failed catalog syncs (the run fails; the next
	// one syncs again).
	CatalogErrors []string `json:"catalog_errors,omitempty"`
	// TablesBlocked lists the topics whose registration the catalog
	// refused with hours.ErrCatalogBlocked (a schema change the table cannot
	// take): their hours wait, the other topics go on.
	TablesBlocked []string `json:"tables_schema_blocked,omitempty"`
	// FilesIn, BytesIn and Records count the Avro files compacted in this
	// run (late ones included), FilesOut and BytesOut the Parquet files
	// written from them: bytes_out/bytes_in is the run's ratio.
	FilesIn  int   `json:"files_in"`
	FilesOut int   `json:"files_out"`
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
	Records  int64 `json:"records"`
	// FilesRewritten, BytesRewritten and RecordsRewritten count the Parquet
	// files of earlier generations copied into the new generation of a
	// recompacted hour (a generation holds the whole hour, so merging 50
	// late records rewrites all of it): written again, not new data.
	FilesRewritten   int      `json:"files_rewritten,omitempty"`
	BytesRewritten   int64    `json:"bytes_rewritten,omitempty"`
	RecordsRewritten int64    `json:"records_rewritten,omitempty"`
	LateFiles        int      `json:"late_files,omitempty"`
	Hours            []string `json:"hours,omitempty"`
	// HoursFailed lists the hours whose compaction failed, with the error.
	HoursFailed []string `json:"hours_failed,omitempty"`
	// SortedRuns counts the sorted runs written for topics with a sort
	// key (Config.SortBy): one per schema group of an hour whose rows fit
	// the sort buffer, more for bigger ones.
	SortedRuns int `json:"sorted_runs,omitempty"`
}

// Compactor runs compactions; one at a time per base (the scheduler's job
// lock guarantees that for scheduled runs).
type Compactor struct {
	cfg   Config
	log   *slog.Logger
	steps int
	// hourErrs are this run's failed hours' errors, which Run's error wraps.
	hourErrs []error
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
	if cfg.SortBufferBytes == 0 {
		cfg.SortBufferBytes = DefaultSortBufferBytes
	}
	if cfg.Threshold == 0 {
		cfg.Threshold = DefaultThreshold
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
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
	// The crash tests choose their crash points by these lines' "at".
	c.log.Debug("step", "step", c.steps, "at", what)
	if c.cfg.CrashAt > 0 && c.steps == c.cfg.CrashAt {
		c.log.Warn("crash injection: SIGKILL", "step", c.steps, "at", what)
		_ = syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered asynchronously
	}
	if c.cfg.PauseAt != "" && what == c.cfg.PauseAt {
		c.log.Warn("pause injection: waiting", "step", c.steps, "at", what, "until", c.cfg.PauseFile)
		_ = os.WriteFile(c.cfg.PauseFile+".paused", []byte(fmt.Sprintf("%d %s\n", c.steps, what)), 0o644)
		for {
			if _, err := os.Stat(c.cfg.PauseFile); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = os.Remove(c.cfg.PauseFile)
		_ = os.Remove(c.cfg.PauseFile + ".paused")
	}
}

// Run, for each topic: syncs the catalog with the files (so that it never
// points at what recovery deletes), finishes or undoes whatever an earlier,
// crashed run left in any hour, marks the hours that became ready
// (_SUCCESS) and syncs, then compacts every ready hour not compacted yet
// and recompacts compacted hours with late files.
func (c *Compactor) Run(ctx context.Context) (Summary, error) {
	var sum Summary
	c.steps, c.hourErrs = 0, nil
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
		if err := c.runTopic(ctx, topic, closed, &sum); err != nil {
			return sum, err
		}
	}
	var errs []string
	if len(sum.HoursFailed) > 0 {
		errs = append(errs, fmt.Sprintf("%d hours failed: %s", len(sum.HoursFailed), strings.Join(sum.HoursFailed, "; ")))
	}
	if len(sum.CatalogErrors) > 0 {
		errs = append(errs, "catalog: "+strings.Join(sum.CatalogErrors, "; "))
	}
	if len(errs) > 0 {
		return sum, &runError{msg: "compact: " + strings.Join(errs, "; "), errs: c.hourErrs}
	}
	return sum, nil
}

// runError is Run's error: its message lists every failure, and it wraps
// the failed hours' errors so that a caller can classify them
// (errors.Is(err, ErrInvalidConfig) for a sort key the schema lacks).
type runError struct {
	msg  string
	errs []error
}

func (e *runError) Error() string   { return e.msg }
func (e *runError) Unwrap() []error { return e.errs }

func (c *Compactor) runTopic(ctx context.Context, topic string, closed time.Time, sum *Summary) error {
	list, err := hours.List(c.cfg.FS, c.cfg.Base, topic)
	if err != nil {
		return err
	}
	// The catalog first learns the truth of the files, so that recovery
	// may delete what a crashed run replaced after its commit point.
	synced := c.sync(ctx, topic, sum) == nil
	for _, h := range list {
		if err := ctx.Err(); err != nil {
			return err
		}
		recovered, err := c.recover(h, synced)
		if err != nil {
			return fmt.Errorf("compact: recover %s: %w", h, err)
		}
		if recovered {
			sum.HoursRecovered++
		}
	}
	marked, err := c.markReady(ctx, topic, list, closed, sum)
	if err != nil {
		return err
	}
	if marked > 0 {
		synced = c.sync(ctx, topic, sum) == nil
	}
	if !synced {
		// Swapping now would leave the catalog pointing at what the swap
		// deletes; the hours wait for a run that reaches the catalog.
		return nil
	}
	for _, h := range list {
		if err := ctx.Err(); err != nil {
			return err
		}
		st, err := hours.ReadSuccess(c.cfg.FS, h.Dir)
		if err != nil {
			return err
		}
		if st == nil {
			sum.HoursOpen++
			continue
		}
		if err := c.compactHour(ctx, h, sum); err != nil {
			if ctx.Err() != nil {
				return err
			}
			// One bad hour (a corrupt file, an unmappable schema) must
			// not hold the others back; it stays as it was and the run fails.
			c.log.Error("compaction of an hour failed; it stays as it was", "hour", h.String(), "err", err)
			sum.HoursFailed = append(sum.HoursFailed, h.String()+": "+err.Error())
			c.hourErrs = append(c.hourErrs, fmt.Errorf("%s: %w", h, err))
		}
	}
	return nil
}

// sync gives the catalog the topic's published partitions, as the files
// say; a failure is recorded in the summary.
func (c *Compactor) sync(ctx context.Context, topic string, sum *Summary) error {
	if c.cfg.Catalog == nil {
		return nil
	}
	err := hours.SyncCatalog(ctx, c.cfg.Catalog, c.cfg.FS, c.cfg.Base, topic, nil)
	if err != nil {
		c.log.Error("catalog sync failed; replaced files are kept until a sync succeeds", "topic", topic, "err", err)
		sum.CatalogErrors = append(sum.CatalogErrors, topic+": "+err.Error())
		if errors.Is(err, hours.ErrCatalogBlocked) && !slices.Contains(sum.TablesBlocked, topic) {
			sum.TablesBlocked = append(sum.TablesBlocked, topic)
		}
		return err
	}
	c.step("sync catalog " + topic)
	return nil
}

func (c *Compactor) exists(name string) (bool, error) { return filesys.Exists(c.cfg.FS, name) }

// recover brings an hour to a clean state. Committed (marker present):
// finish deleting the inputs, the replaced generation and the old layout's
// outputs, but only once the catalog was synced (deleteOK), since it may
// still point at them. Uncommitted: drop every staged output and
// generation directory. Reports whether there was anything to do.
func (c *Compactor) recover(h hours.Hour, deleteOK bool) (bool, error) {
	fsys := c.cfg.FS
	did := false
	remove := func(name, what string) error {
		err := fsys.RemoveAll(name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		c.step("recover: remove " + what)
		did = true
		return nil
	}
	m, err := hours.ReadManifest(fsys, h.Dir)
	if err != nil {
		return false, err
	}
	list, err := fsys.ReadDir(h.Dir)
	if err != nil {
		return false, err
	}
	names := map[string]bool{}
	for _, fi := range list {
		names[fi.Name()] = true
	}
	for _, tmp := range []string{hours.MarkerTmp, hours.SuccessTmp} {
		if names[tmp] {
			if err := remove(path.Join(h.Dir, tmp), tmp); err != nil {
				return did, err
			}
		}
	}
	gens, err := hours.Generations(fsys, h)
	if err != nil {
		return did, err
	}
	current := 0
	if m != nil && m.Version != hours.ManifestV1 {
		current = m.Generation
	}
	for _, g := range gens {
		// A newer generation than the committed one was never published;
		// an older one may still be in the catalog until it is synced.
		if g > current || (g < current && deleteOK) {
			if err := remove(hours.GenerationDir(h, g), fmt.Sprintf("generation %d", g)); err != nil {
				return did, err
			}
		}
	}
	if m == nil || (m.Version != hours.ManifestV1 && deleteOK) {
		// Uncommitted outputs of the old layout, or its outputs replaced by
		// a generation directory.
		for _, fi := range list {
			if _, err := hours.ParseCompactedFile(fi.Name()); err == nil && !fi.IsDir() {
				if err := remove(path.Join(h.Dir, fi.Name()), "staged "+fi.Name()); err != nil {
					return did, err
				}
			}
		}
	}
	if m != nil && deleteOK {
		for _, in := range m.Inputs {
			if names[in.Name] {
				if err := remove(path.Join(h.Dir, in.Name), "input "+in.Name); err != nil {
					return did, err
				}
			}
		}
	}
	if names[hours.TmpDir] {
		if err := remove(path.Join(h.Dir, hours.TmpDir), hours.TmpDir); err != nil {
			return did, err
		}
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

// compactHour turns a ready hour's Avro files into Parquet in a new
// generation directory, with the previous generation's outputs (copied) if
// it was compacted before; see doc.go for the steps.
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
	done := map[string]bool{}
	if m != nil {
		for _, in := range m.Inputs {
			done[in.Name] = true
		}
	}
	var ins []*input
	for _, fi := range list {
		if lf, err := hours.ParseLoaderFile(fi.Name()); err == nil && !fi.IsDir() && lf.Format == hours.Avro && !done[fi.Name()] {
			ins = append(ins, &input{file: lf, name: fi.Name(), size: fi.Size()})
		}
	}
	if len(ins) == 0 && (m == nil || m.Version != hours.ManifestV1) {
		return nil // nothing new (a compacted hour without late files)
	}
	if m != nil {
		sum.LateFiles += len(ins)
	}
	sortInputs(ins)
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
	gen := 1
	if m != nil && m.Version != hours.ManifestV1 {
		gen = m.Generation + 1
	}
	loc := hours.GenerationDir(h, gen)
	if err := fsys.MkdirAll(loc); err != nil {
		return err
	}
	// The previous generation's outputs, copied, so the new location
	// holds the whole hour; their numbers are taken.
	var outs []hours.File
	var runs int
	next := map[uint32]int{}
	rewritten := 0 // outs[:rewritten] are the copied earlier outputs
	if m != nil {
		rewritten = len(m.Outputs)
		for _, o := range m.Outputs {
			if err := c.copyFile(path.Join(m.OutputDir(h), o.Name), path.Join(loc, o.Name)); err != nil {
				return err
			}
			c.step("copy " + o.Name)
			outs = append(outs, o)
			if cf, err := hours.ParseCompactedFile(o.Name); err == nil {
				next[cf.SchemaID] = max(next[cf.SchemaID], cf.Seq+1)
			}
		}
	}
	for _, g := range groups {
		o, r, err := c.writeGroup(ctx, h, loc, g, next[g[0].file.SchemaID])
		if err != nil {
			return err
		}
		runs += r
		next[g[0].file.SchemaID] += len(o)
		outs = append(outs, o...)
	}
	if err := c.copyFile(path.Join(h.Dir, hours.SuccessMarker), path.Join(loc, hours.SuccessMarker)); err != nil {
		return err
	}
	c.step("copy " + hours.SuccessMarker)
	man := hours.Manifest{Version: hours.ManifestVersion, CompactedAt: c.cfg.Now().UTC(), Generation: gen, Outputs: outs}
	if m != nil {
		man.Inputs = append(man.Inputs, m.Inputs...)
	}
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
	// The catalog switches to the new location before anything it may
	// point at is deleted; if it cannot, recovery deletes after a later sync.
	if err := c.sync(ctx, h.Topic, sum); err != nil {
		return fmt.Errorf("committed generation %d, replaced files kept: %w", gen, err)
	}
	for _, in := range ins {
		if err := fsys.Remove(path.Join(h.Dir, in.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		c.step("remove input " + in.name)
		sum.BytesIn += in.size
	}
	if m != nil {
		if m.Version == hours.ManifestV1 {
			for _, o := range m.Outputs {
				if err := fsys.Remove(path.Join(h.Dir, o.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				c.step("remove old-layout output " + o.Name)
			}
		} else {
			if err := fsys.RemoveAll(m.OutputDir(h)); err != nil {
				return err
			}
			c.step(fmt.Sprintf("remove generation %d", m.Generation))
		}
	}
	if m == nil {
		sum.HoursCompacted++
	} else {
		sum.HoursRecompacted++
	}
	sum.FilesIn += len(ins)
	sum.Records += recs
	sum.SortedRuns += runs
	for i, o := range outs {
		if i < rewritten {
			sum.FilesRewritten++
			sum.BytesRewritten += o.Size
			sum.RecordsRewritten += o.Records
		} else {
			sum.FilesOut++
			sum.BytesOut += o.Size
		}
	}
	sum.Hours = append(sum.Hours, h.String())
	c.log.Info("compacted hour", "hour", h.String(), "generation", gen, "avro_files", len(ins), "parquet_files", len(outs)-rewritten, "records", recs,
		"rewritten_files", rewritten, "sorted_runs", runs)
	return nil
}

// copyFile copies src to dst (a compaction output into a new generation,
// the _SUCCESS marker).
func (c *Compactor) copyFile(src, dst string) error {
	r, err := c.cfg.FS.Open(src)
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := c.cfg.FS.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, bufio.NewReaderSize(r, 1<<20)); err != nil {
		w.Close()
		return err
	}
	return w.Close()
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

// writeGroup writes the Parquet files of one schema group into tmp, numbered from seq0,
// starting a new file when the current one reaches the target size, and
// reports how many sorted runs it wrote (0 for a topic without a sort key).
func (c *Compactor) writeGroup(ctx context.Context, h hours.Hour, tmp string, g []*input, seq0 int) ([]hours.File, int, error) {
	root, m, err := c.mapping(g[0].schema)
	if err != nil {
		return nil, 0, err
	}
	key, err := c.sortKey(h.Topic, root, g[0].file.SchemaID)
	if err != nil {
		return nil, 0, err
	}
	jsonSchema := m.jsonSchema(root)
	var outs []hours.File
	var cur *parquetFile
	open := func() error {
		name := hours.CompactedFile{Topic: h.Topic, SchemaID: g[0].file.SchemaID, Seq: seq0 + len(outs)}.Name()
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
		// parquet-go gives every column field_id 0; readers that match
		// columns by id (Iceberg, Spark's fieldId.read) would take them all
		// for one. Avro has no ids to give: none, as parquet-mr writes.
		for _, el := range pw.SchemaHandler.SchemaElements {
			el.FieldID = nil
		}
		// The writer schema, under parquet-avro's key: what the Parquet
		// types leave out (time-millis and -micros are plain integers,
		// doc.go) a reader finds there (package hours/rows does).
		avroSchema := g[0].schema
		pw.Footer.KeyValueMetadata = append(pw.Footer.KeyValueMetadata, &parquet.KeyValue{Key: hours.ParquetAvroSchemaKey, Value: &avroSchema})
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
	write := func(rec any) error {
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
	}
	// With a sort key rows go through the sort buffer, which writes them
	// ordered whenever it is full and once the group's inputs are read.
	add := write
	var sorted *sortBuffer
	if key != nil {
		sorted = &sortBuffer{key: key, limit: c.cfg.SortBufferBytes}
		add = func(rec any) error {
			if sorted.add(rec) {
				return sorted.flush(write)
			}
			return nil
		}
	}
	for _, in := range g {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		n, err := c.copyRows(path.Join(h.Dir, in.name), add)
		if err != nil {
			if cur != nil {
				cur.wc.Close()
			}
			return nil, 0, fmt.Errorf("%s: %w", in.name, err)
		}
		in.records = n
	}
	if sorted != nil {
		if err := sorted.flush(write); err != nil {
			if cur != nil {
				cur.wc.Close()
			}
			return nil, 0, fmt.Errorf("sorted rows: %w", err)
		}
	}
	if cur != nil {
		if err := closeCur(); err != nil {
			return nil, 0, err
		}
	}
	runs := 0
	if sorted != nil {
		runs = sorted.runs
	}
	return outs, runs, nil
}

func (c *Compactor) mapping(schema string) (*node, *mapper, error) {
	var s any
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		return nil, nil, err
	}
	m := &mapper{named: map[string]any{}, int64Millis: c.cfg.TimestampType == TimestampINT64}
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
