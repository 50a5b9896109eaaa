package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tributary/tributary/audit/service"
	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/jobs"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/jobs/retention"
	"github.com/tributary/tributary/jobs/tables"
	"github.com/tributary/tributary/loader"
)

// jobsCompactOptions are the flags of `tributary jobs compact`.
type jobsCompactOptions struct {
	base          string
	loaderJob     string
	closedThrough string
	force         bool
	topics        string
	delay         time.Duration
	codec         string
	timestampType string
	targetSize    string
	sortBy        []string
	summary       string
	logLevel      string
	hdfsConfig    string
	auditURL      string
	threshold     float64
	timeout       time.Duration
	catalogFile   string
	tablesConfig  string
}

func newJobsCompactCommand() *cobra.Command {
	var o jobsCompactOptions
	cmd := &cobra.Command{
		Use:   "compact --base URI --loader-job NAME",
		Short: "Mark ready hours (_SUCCESS) and compact them into Parquet (what a compact job runs)",
		Long: "For each topic: finish or undo what a crashed earlier run left; mark each closed hour (the loader job " +
			"has committed past the hour's end plus --delay) ready once the audit service proves it complete " +
			"(--audit-url, --completeness-threshold) or --completeness-timeout passed (ready-incomplete); write each " +
			"ready hour's Avro files as Parquet into a generation directory and switch to it atomically, merging " +
			"late files into a new generation; with --sort-by, a topic's rows are ordered by its key in each file. " +
			"Prints a JSON summary.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runJobsCompact(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.base, "base", "", "loader output: hdfs://host:port/path, file:///path or a local path (required)")
	f.StringVar(&o.loaderJob, "loader-job", "", "the loader job whose commits close hours (required unless --closed-through)")
	f.StringVar(&o.closedThrough, "closed-through", "", "treat data as complete up to this time instead of asking the loader: RFC 3339 (2026-12-04T10:00:00Z), now, or now-DURATION (now-2h); never past now, nor past what the loader jobs under --base have committed unless --force-closed-through")
	f.BoolVar(&o.force, "force-closed-through", false, "accept a --closed-through past what the loader has committed: hours still being loaded get _SUCCESS, which downstream schedulers act on")
	f.StringVar(&o.topics, "topics", "", "comma-separated topics (default: every topic under --base)")
	f.DurationVar(&o.delay, "delay", compact.DefaultDelay, "wait past an hour's end for late records")
	f.StringVar(&o.codec, "codec", compact.DefaultCodec, "Parquet compression: zstd or snappy")
	f.StringVar(&o.timestampType, "parquet-timestamp-type", compact.TimestampINT96, "Parquet type of Avro timestamp-millis: INT96 (what Spark reads through a Hive table's Parquet partitions) or INT64 (TIMESTAMP(MILLIS, UTC), delta-encoded: about a byte a row against INT96's 4; for files read only by native Parquet readers, so not with a Hive --tables-config)")
	f.StringVar(&o.targetSize, "target-file-size", "128MiB", "approximate size of each Parquet file")
	f.StringArrayVar(&o.sortBy, "sort-by", nil, "TOPIC=COL[,COL...]: order that topic's rows in each Parquet file by these top-level fields, nulls first, e.g. requests=user_id (repeatable); pays where other columns follow the key")
	f.StringVar(&o.summary, "summary-json", "", "also write the JSON summary to this file")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&o.hdfsConfig, "hdfs-config", "", "properties file with the HDFS client keys of --base (Kerberos: hdfs.authentication.kerberos, connect.hdfs.principal, ...; the loader's file serves)")
	addReadinessFlags(f, &o.auditURL, &o.threshold, &o.timeout)
	f.StringVar(&o.catalogFile, "catalog-file", "", "keep the published partitions (ready hours, their locations) in this local JSON file")
	f.StringVar(&o.tablesConfig, "tables-config", "", "register ready and compacted hours in a Hive Metastore: a properties file with hive.integration=true, hive.metastore.uris, hive.database, hive.table.name, schema.compatibility and schema.registry.url (kafka-connect-hdfs's keys)")
	return cmd
}

// addReadinessFlags adds the flags of the readiness rule (compact, loader hours).
func addReadinessFlags(f *pflag.FlagSet, auditURL *string, threshold *float64, timeout *time.Duration) {
	f.StringVar(auditURL, "audit-url", "", "the audit service (http://host:port): an hour is ready once its counts prove it complete; without it a closed hour is ready")
	f.Float64Var(threshold, "completeness-threshold", compact.DefaultThreshold, "completeness.threshold: the loader's count must reach this fraction of the producers' in every audit window of the hour (Gobblin: 0.999)")
	f.DurationVar(timeout, "completeness-timeout", compact.DefaultTimeout, "completeness.timeout: past an hour's end plus this, publish it ready-incomplete with its shortfall")
}

// auditSource is the readiness check's view of the audit service at url ("" none).
func auditSource(url string) (hours.Audit, error) {
	if url == "" {
		return nil, nil
	}
	c, err := service.NewClient(url, nil)
	if err != nil {
		return nil, fmt.Errorf("--audit-url: %w", err)
	}
	return auditWindows{c}, nil
}

type auditWindows struct{ c *service.Client }

func (a auditWindows) Windows(ctx context.Context, topic string, from, to time.Time) ([]hours.AuditWindow, error) {
	return a.c.LoaderWindows(ctx, topic, from, to)
}

func runJobsCompact(cmd *cobra.Command, o jobsCompactOptions) error {
	logger, err := newLogger(cmd, o.logLevel)
	if err != nil {
		return err
	}
	if o.base == "" {
		return errors.New("--base is required")
	}
	if o.loaderJob == "" && o.closedThrough == "" {
		return errors.New("--loader-job is required (or --closed-through)")
	}
	size, err := jobs.ParseSize(o.targetSize)
	if err != nil || size <= 0 {
		return fmt.Errorf("--target-file-size %q: want a positive size like 128MiB", o.targetSize)
	}
	sortBy, err := compact.ParseSortBy(o.sortBy)
	if err != nil {
		return fmt.Errorf("--sort-by: %w", err)
	}
	tsType, err := timestampTypeFlag(o.timestampType, o.tablesConfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hdfsOpts, err := readHDFSConfig(o.hdfsConfig)
	if err != nil {
		return err
	}
	fsys, base, err := openBase(ctx, "--base", o.base, hdfsOpts.WithLogger(logger))
	if err != nil {
		return err
	}
	defer fsys.Close()
	if o.loaderJob != "" {
		if err := checkLoaderJob(fsys, base, o.base, o.loaderJob); err != nil {
			return err
		}
	}
	closed := func(ctx context.Context) (time.Time, error) {
		return loader.CommittedThrough(ctx, fsys, base, o.loaderJob)
	}
	if o.closedThrough != "" {
		t, err := closedThroughFlag(ctx, o, fsys, base, time.Now())
		if err != nil {
			return err
		}
		closed = func(context.Context) (time.Time, error) { return t, nil }
	}
	audit, err := auditSource(o.auditURL)
	if err != nil {
		return err
	}
	catalog, closeCatalog, err := catalogOf(o.catalogFile, o.tablesConfig, o.base, logger)
	if err != nil {
		return err
	}
	defer closeCatalog()
	cfg := compact.Config{FS: fsys, Base: base, ClosedThrough: closed, Delay: o.delay, Codec: o.codec, TimestampType: tsType,
		TargetFileSize: size, SortBy: sortBy, Logger: logger, Audit: audit, Threshold: o.threshold, Timeout: o.timeout,
		Catalog: catalog}
	if o.topics != "" {
		cfg.Topics = strings.Split(o.topics, ",")
		for _, t := range cfg.Topics {
			if err := checkTopic(fsys, base, "--topics", o.base, t); err != nil {
				return err
			}
		}
	}
	if v := os.Getenv(compact.EnvCrashAt); v != "" {
		if cfg.CrashAt, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("%s: %w", compact.EnvCrashAt, err)
		}
	}
	if v := os.Getenv(compact.EnvPauseAt); v != "" {
		at, file, ok := strings.Cut(v, ":")
		if !ok || at == "" || file == "" {
			return fmt.Errorf("%s=%q: want STEP:FILE", compact.EnvPauseAt, v)
		}
		cfg.PauseAt, cfg.PauseFile = at, file
	}
	c, err := compact.New(cfg)
	if err != nil {
		return err
	}
	sum, err := c.Run(ctx)
	// The summary says what was done even when some hour failed.
	if werr := writeSummary(cmd, o.summary, sum); err == nil {
		err = werr
	}
	return err
}

// timestampTypeFlag reads --parquet-timestamp-type and refuses INT64 with
// a Hive catalog (--tables-config with hive.integration=true): Spark reads
// a Hive table's Parquet partitions through Hive's serde, whose Parquet
// reader (Hive 2.3, Spark's built-in client) reads timestamps only from
// INT96, so every query touching the column would fail.
func timestampTypeFlag(v, tablesConfig string) (string, error) {
	t, err := compact.ParseTimestampType(v)
	if err != nil || v == "" {
		return "", badFlag("parquet-timestamp-type", v, "want INT96 or INT64")
	}
	if t != compact.TimestampINT64 || tablesConfig == "" {
		return t, nil
	}
	props, err := readPropertiesFile(tablesConfig, nil)
	if err != nil {
		return "", fmt.Errorf("--tables-config %s: %w", tablesConfig, err)
	}
	// A config that is otherwise bad is catalogOf's to report.
	if cfg, _ := tables.ConfigFromProperties(properties.New(props)); cfg.Enabled {
		return "", fmt.Errorf("--parquet-timestamp-type INT64 with --tables-config %s (hive.integration=true): Spark reads a Hive table's Parquet partitions through Hive 2.3's Parquet reader, which reads timestamps only from INT96 (queries on the column would fail); keep INT96 or drop the Hive registration", tablesConfig)
	}
	return t, nil
}

// openBase opens the loader output uri of flag and checks that it exists:
// a mistyped base would otherwise read as an output without hours.
func openBase(ctx context.Context, flag, uri string, opts filesys.HDFSOptions) (filesys.FS, string, error) {
	fsys, base, err := filesys.OpenWith(ctx, uri, opts)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", flag, err)
	}
	if ok, err := filesys.Exists(fsys, base); err != nil || !ok {
		fsys.Close()
		if err == nil {
			err = errors.New("does not exist")
		}
		return nil, "", fmt.Errorf("%s %s: %w", flag, uri, err)
	}
	return fsys, base, nil
}

// checkLoaderJob checks that job keeps state under base (uri, for the
// message): an unknown job has committed nothing, so every hour would stay
// open.
func checkLoaderJob(fsys filesys.FS, base, uri, job string) error {
	known, err := loader.Jobs(fsys, base)
	if err != nil {
		return err
	}
	if slices.Contains(known, job) {
		return nil
	}
	return fmt.Errorf("--loader-job %q: no such loader job under %s (%s)", job, uri, listOr(known, "loader jobs there", "no loader job has run there"))
}

// checkTopic checks that topic has a directory under base.
func checkTopic(fsys filesys.FS, base, flag, uri, topic string) error {
	known, err := hours.Topics(fsys, base)
	if err != nil {
		return err
	}
	if slices.Contains(known, topic) {
		return nil
	}
	return fmt.Errorf("%s %q: no such topic under %s (%s)", flag, topic, uri, listOr(known, "topics there", "no topic has been loaded there"))
}

// listOr is "what: a, b, c" (at most ten, then a count), or none when the
// list is empty.
func listOr(items []string, what, none string) string {
	if len(items) == 0 {
		return none
	}
	const show = 10
	s := what + ": " + strings.Join(items[:min(len(items), show)], ", ")
	if len(items) > show {
		s += fmt.Sprintf(" and %d more", len(items)-show)
	}
	return s
}

// closedThroughFlag reads --closed-through (parseTimeFlag) and refuses a
// time past now, which would mark hours not yet over ready, and a time
// past what the loader has committed (the --loader-job, else every loader
// job under the base) unless --force-closed-through: _SUCCESS is what
// downstream schedulers start on, and it would land on hours the loader is
// still writing.
func closedThroughFlag(ctx context.Context, o jobsCompactOptions, fsys filesys.FS, base string, now time.Time) (time.Time, error) {
	t, err := parseTimeFlag("closed-through", o.closedThrough, now)
	if err != nil {
		return t, err
	}
	if t.After(now) {
		return t, fmt.Errorf("--closed-through %s is in the future (now is %s): an hour is closed only once it is over and loaded",
			t.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if o.force {
		return t, nil
	}
	jobs := []string{o.loaderJob}
	if o.loaderJob == "" {
		if jobs, err = loader.Jobs(fsys, base); err != nil {
			return t, err
		}
	}
	for _, job := range jobs {
		committed, err := loader.CommittedThrough(ctx, fsys, base, job)
		if err != nil {
			return t, err
		}
		if t.After(committed) {
			at := "nothing yet"
			if !committed.IsZero() {
				at = "through " + committed.Format(time.RFC3339)
			}
			return t, fmt.Errorf("--closed-through %s is past what loader job %q has committed (%s): its hours would get _SUCCESS while still loading; --force-closed-through accepts it",
				t.Format(time.RFC3339), job, at)
		}
	}
	return t, nil
}

// parseTimeFlag reads a time flag: RFC 3339 ("2026-12-04T10:00:00Z",
// "2026-12-04T10:00:00+01:00"), "now", or now minus a Go duration
// ("now-2h", "now-90m").
func parseTimeFlag(flag, v string, now time.Time) (time.Time, error) {
	s := strings.TrimSpace(v)
	if rest, ok := strings.CutPrefix(s, "now"); ok {
		if rest == "" {
			return now.UTC(), nil
		}
		if d, err := time.ParseDuration(strings.TrimPrefix(rest, "-")); err == nil && rest[0] == '-' && d >= 0 {
			return now.Add(-d).UTC(), nil
		}
	} else if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, badFlag(flag, v, "want an RFC 3339 time (2026-12-04T10:00:00Z), now, or now-DURATION (now-2h, now-90m)")
}

// writeSummary prints v as one JSON line (the last line of output, which is
// what the scheduler reads when no summary file is written) and to file.
func writeSummary(cmd *cobra.Command, file string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if file != "" {
		if err := os.WriteFile(file, b, 0o644); err != nil {
			return fmt.Errorf("--summary-json: %w", err)
		}
	}
	fmt.Fprintln(cmd.OutOrStdout(), string(b))
	return nil
}

// jobsRetentionOptions are the flags of `tributary jobs retention`.
type jobsRetentionOptions struct {
	base         string
	maxAge       time.Duration
	topicAge     []string
	summary      string
	logLevel     string
	hdfsConfig   string
	catalog      string
	tablesConfig string
}

func newJobsRetentionCommand() *cobra.Command {
	var o jobsRetentionOptions
	cmd := &cobra.Command{
		Use:   "retention --base URI [--max-age 168h] [--topic-age TOPIC=AGE ...]",
		Short: "Delete hours of the loader's output older than a per-topic age (what a retention job runs)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runJobsRetention(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.base, "base", "", "loader output: hdfs://host:port/path, file:///path or a local path (required)")
	f.DurationVar(&o.maxAge, "max-age", 0, "age past which an hour of any topic without its own --topic-age is deleted (0: keep)")
	f.StringArrayVar(&o.topicAge, "topic-age", nil, "TOPIC=AGE: that topic's own age, e.g. page-views=72h (repeatable)")
	f.StringVar(&o.summary, "summary-json", "", "also write the JSON summary to this file")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&o.hdfsConfig, "hdfs-config", "", "properties file with the HDFS client keys of --base (Kerberos: hdfs.authentication.kerberos, connect.hdfs.principal, ...; the loader's file serves)")
	f.StringVar(&o.catalog, "catalog-file", "", "drop expired hours from the published partitions in this local JSON file (as compact --catalog-file)")
	f.StringVar(&o.tablesConfig, "tables-config", "", "drop expired hours' partitions from the Hive Metastore tables (as compact --tables-config)")
	return cmd
}

func runJobsRetention(cmd *cobra.Command, o jobsRetentionOptions) error {
	logger, err := newLogger(cmd, o.logLevel)
	if err != nil {
		return err
	}
	if o.base == "" {
		return errors.New("--base is required")
	}
	ages := map[string]time.Duration{}
	for _, ta := range o.topicAge {
		t, a, ok := strings.Cut(ta, "=")
		d, err := time.ParseDuration(a)
		if !ok || t == "" || err != nil || d <= 0 {
			return fmt.Errorf("--topic-age %q: want TOPIC=AGE with a positive duration, e.g. page-views=72h", ta)
		}
		ages[t] = d
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hdfsOpts, err := readHDFSConfig(o.hdfsConfig)
	if err != nil {
		return err
	}
	fsys, base, err := filesys.OpenWith(ctx, o.base, hdfsOpts.WithLogger(logger))
	if err != nil {
		return fmt.Errorf("--base: %w", err)
	}
	defer fsys.Close()
	catalog, closeCatalog, err := catalogOf(o.catalog, o.tablesConfig, o.base, logger)
	if err != nil {
		return err
	}
	defer closeCatalog()
	sum, err := retention.Run(ctx, retention.Config{FS: fsys, Base: base, MaxAge: o.maxAge, Topics: ages, Logger: logger,
		Catalog: catalog})
	if err != nil {
		return err
	}
	return writeSummary(cmd, o.summary, sum)
}
