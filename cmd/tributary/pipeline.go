package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/jobs/tables"
	"github.com/tributary/tributary/pipeline"
)

// pipelineOptions are the flags shared by `tributary pipeline up` and
// `tributary pipeline demo`.
type pipelineOptions struct {
	dir           string
	datacenters   string
	brokers       int
	partitions    int32
	host          string
	port          int
	registry      string
	dashboard     string
	zookeeper     string
	hdfs          string
	hdfsPath      string
	hdfsConfig    string
	topic         string
	rate          float64
	auditWindow   time.Duration
	auditInterval time.Duration
	loadInterval  time.Duration
	loader        string
	logLevel      string
	logFile       string
	secure        bool
	hiveMetastore string
	hiveDatabase  string

	// demo only
	partitionDuration time.Duration
	compactInterval   time.Duration
	duration          time.Duration
	drain             time.Duration
	progress          time.Duration
}

func newPipelineCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pipeline",
		Short: "Run the whole pipeline in one process: datacenters, mirror, analytics, loader, audit",
	}
	cmd.AddCommand(newPipelineUpCommand(), newPipelineDemoCommand())
	return cmd
}

func addPipelineFlags(cmd *cobra.Command, o *pipelineOptions, window time.Duration, load time.Duration) {
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "tributary-pipeline-data", "data directory: clusters under DIR/<cluster>, loaded files under DIR/data")
	f.StringVar(&o.datacenters, "datacenters", strings.Join(pipeline.DefaultDatacenters, ","), "comma-separated names of the online datacenter clusters")
	f.IntVar(&o.brokers, "brokers", pipeline.DefaultBrokers, "brokers per cluster")
	f.Int32Var(&o.partitions, "partitions", pipeline.DefaultPartitions, "partitions of the page-view topic")
	f.StringVar(&o.host, "host", "127.0.0.1", "address every part listens on")
	f.IntVar(&o.port, "port", 0, "first broker port; cluster i uses PORT+100*i onwards (0: free ports)")
	f.StringVar(&o.registry, "registry", "", "schema registry listen address (default HOST:0, a free port)")
	f.StringVar(&o.dashboard, "dashboard", "", "audit dashboard listen address (default HOST:0, a free port)")
	f.StringVar(&o.zookeeper, "zookeeper", "", "use ZooKeeper at HOST:PORT[/chroot] instead of in-process coordination; each cluster gets <chroot>/<cluster> (chroot default "+pipeline.DefaultZooKeeperRoot+")")
	f.StringVar(&o.hdfs, "hdfs", "", "load into HDFS at the NameNode HOST:PORT instead of DIR/data")
	f.StringVar(&o.hdfsPath, "hdfs-path", pipeline.DefaultHDFSPath, "output directory on HDFS")
	f.StringVar(&o.hdfsConfig, "hdfs-config", "", "properties file with the HDFS client keys of --hdfs (Kerberos: hdfs.authentication.kerberos, connect.hdfs.principal, ...)")
	f.StringVar(&o.topic, "topic", pipeline.DefaultTopic, "page-view topic")
	f.Float64Var(&o.rate, "rate", pipeline.DefaultRate, "page views per second produced in each datacenter (negative: no producers)")
	f.DurationVar(&o.auditWindow, "audit-window", window, "audit window")
	f.DurationVar(&o.auditInterval, "audit-interval", pipeline.DefaultAuditInterval, "how often every tier publishes its audit counts")
	f.DurationVar(&o.loadInterval, "load-interval", load, "time between loader runs (scheduled) or commits (continuous)")
	f.StringVar(&o.loader, "loader", "scheduled", "scheduled (a jobs-scheduler job running 'tributary loader run') or continuous (in-process)")
	f.StringVar(&o.logLevel, "log-level", "warn", "debug, info, warn or error")
	f.StringVar(&o.logFile, "log-file", "", "write the parts' logs to this file instead of stderr")
	f.BoolVar(&o.secure, "secure", false, "secure every part: SASL_SSL (SCRAM-SHA-512) to every cluster, the mirror's target over SSL with a client certificate, "+
		"SSL between brokers, the registry and dashboard over HTTPS with basic authentication; certificates, users and passwords are generated into DIR/"+pipeline.SecureDir)
	f.StringVar(&o.hiveMetastore, "hive-metastore", "", "register the page-view table in this Hive Metastore (hive.metastore.uris: thrift://HOST:PORT[,...]): each partition once ready, Avro, then Parquet once compacted; "+
		"also written, with the other keys of jobs compact --tables-config, to DIR/"+pipeline.TablesFile)
	f.StringVar(&o.hiveDatabase, "hive-database", tables.DefaultDatabase, "hive.database of --hive-metastore: the table is DATABASE.TOPIC")
}

func newPipelineUpCommand() *cobra.Command {
	var o pipelineOptions
	cmd := &cobra.Command{
		Use:   "up [--dir DIR] [--zookeeper HOST:PORT] [--hdfs HOST:PORT]",
		Short: "Start the pipeline and run it until Ctrl-C",
		Long: "Start, in this process, the online datacenter clusters (dc1, dc2), the analytics cluster, " +
			"the schema registry, an Avro page-view producer on each datacenter, a mirror from the datacenters " +
			"into analytics, a loader writing Avro files to DIR/data (or HDFS), and the audit service with its " +
			"dashboard; print where each part listens, and run until SIGINT or SIGTERM, which stops every part cleanly.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPipelineUp(cmd, o) },
	}
	addPipelineFlags(cmd, &o, pipeline.DefaultAuditWindow, pipeline.DefaultLoadInterval)
	cmd.Flags().DurationVar(&o.partitionDuration, "partition-duration", 0, "the loader's partition.duration.ms, whole minutes (0: an hour)")
	cmd.Flags().DurationVar(&o.compactInterval, "compact-interval", 0, "run readiness (_SUCCESS from the audit counts) and compaction this often (0: never, or every "+
		upCompactInterval.String()+" with --hive-metastore)")
	return cmd
}

// upCompactInterval is pipeline up's compaction interval with
// --hive-metastore and no --compact-interval: the tables are registered by
// the compaction part.
const upCompactInterval = time.Minute

func newPipelineDemoCommand() *cobra.Command {
	var o pipelineOptions
	cmd := &cobra.Command{
		Use:   "demo [--duration 90s]",
		Short: "Run the pipeline for a bounded time and prove it lost and duplicated nothing",
		Long: "Run `pipeline up` for --duration, then stop the producers, wait for the mirror and the loader " +
			"to catch up and the audit windows to close, and print the audit report, the loaded files, a few " +
			"records read back from them and one summary line. Exits non-zero unless every produced record is " +
			"in the loaded files exactly once and every closed audit window is complete at every tier.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPipelineDemo(cmd, o) },
	}
	addPipelineFlags(cmd, &o, 10*time.Second, 5*time.Second)
	cmd.Flags().DurationVar(&o.duration, "duration", pipeline.DefaultDemoDuration, "how long the producers run")
	cmd.Flags().DurationVar(&o.drain, "drain-timeout", pipeline.DefaultDemoDrain, "how long to wait, after the producers stop, for everything to be loaded and audited")
	cmd.Flags().DurationVar(&o.progress, "progress", 10*time.Second, "print a progress line this often (0: never)")
	cmd.Flags().DurationVar(&o.partitionDuration, "partition-duration", time.Minute, "the loader's partition.duration.ms: short, so partitions become ready and compacted within the demo")
	cmd.Flags().DurationVar(&o.compactInterval, "compact-interval", 10*time.Second, "run readiness (_SUCCESS from the audit counts) and compaction this often (0: never)")
	return cmd
}

// config turns the flags into a pipeline configuration; errors name the flag.
func (o *pipelineOptions) config(cmd *cobra.Command) (pipeline.Config, func(), error) {
	level, err := parseLogLevel(o.logLevel)
	if err != nil {
		return pipeline.Config{}, nil, err
	}
	var dcs []string
	for _, d := range strings.Split(o.datacenters, ",") {
		if d = strings.TrimSpace(d); d != "" {
			dcs = append(dcs, d)
		}
	}
	if len(dcs) == 0 {
		return pipeline.Config{}, nil, badFlag("datacenters", o.datacenters, "at least one datacenter is required")
	}
	var scheduled bool
	switch o.loader {
	case "scheduled":
		scheduled = true
	case "continuous":
	default:
		return pipeline.Config{}, nil, badFlag("loader", o.loader, "want scheduled or continuous")
	}
	checks := []struct {
		flag string
		bad  bool
		val  any
	}{
		{"brokers", o.brokers < 1 || o.brokers > 16, o.brokers},
		{"partitions", o.partitions < 1, o.partitions},
		{"port", o.port < 0 || o.port > 65535, o.port},
		{"rate", o.rate == 0, o.rate},
		{"audit-window", o.auditWindow < time.Second || o.auditWindow%time.Millisecond != 0, o.auditWindow},
		{"audit-interval", o.auditInterval <= 0, o.auditInterval},
		{"load-interval", o.loadInterval <= 0, o.loadInterval},
		{"duration", o.duration < 0, o.duration},
		{"drain-timeout", o.drain < 0, o.drain},
		{"partition-duration", o.partitionDuration < 0, o.partitionDuration},
		{"compact-interval", o.compactInterval < 0, o.compactInterval},
	}
	for _, c := range checks {
		if c.bad {
			return pipeline.Config{}, nil, badFlag(c.flag, fmt.Sprint(c.val), "out of range (see --help)")
		}
	}
	logOut, closeLog := cmd.ErrOrStderr(), func() {}
	if o.logFile != "" {
		f, err := os.OpenFile(o.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return pipeline.Config{}, nil, fmt.Errorf("--log-file: %w", err)
		}
		logOut, closeLog = f, func() { _ = f.Close() }
	}
	hdfsOpts, err := readHDFSConfig(o.hdfsConfig)
	if err != nil {
		closeLog()
		return pipeline.Config{}, nil, err
	}
	var metastores []string
	if o.hiveMetastore != "" {
		metastores = properties.SplitList(o.hiveMetastore)
		if o.compactInterval == 0 && !cmd.Flags().Changed("compact-interval") {
			o.compactInterval = upCompactInterval
		}
	}
	cfg := pipeline.Config{
		HDFSOptions:       hdfsOpts,
		Dir:               o.dir,
		Datacenters:       dcs,
		Brokers:           o.brokers,
		Partitions:        o.partitions,
		Host:              o.host,
		Port:              o.port,
		RegistryAddr:      o.registry,
		DashboardAddr:     o.dashboard,
		ZooKeeper:         o.zookeeper,
		HDFS:              o.hdfs,
		HDFSPath:          o.hdfsPath,
		Topic:             o.topic,
		Rate:              o.rate,
		AuditWindow:       o.auditWindow,
		AuditInterval:     o.auditInterval,
		LoadInterval:      o.loadInterval,
		PartitionDuration: o.partitionDuration,
		CompactInterval:   o.compactInterval,
		LoaderScheduled:   scheduled,
		Secure:            o.secure,
		HiveMetastoreURIs: metastores,
		HiveDatabase:      o.hiveDatabase,
		Logger:            textLogger(logOut, level),
	}
	if err := cfg.Validate(); err != nil {
		closeLog()
		return pipeline.Config{}, nil, o.tablesError(err)
	}
	return cfg, closeLog, nil
}

func runPipelineUp(cmd *cobra.Command, o pipelineOptions) (err error) {
	cfg, closeLog, err := o.config(cmd)
	if err != nil {
		return err
	}
	defer closeLog()
	ctx, stop := signalContext(cmd)
	defer stop()
	p, err := pipeline.Start(ctx, cfg)
	if err != nil {
		return o.tablesError(err)
	}
	defer func() { err = errors.Join(err, p.Close()) }()
	out := cmd.OutOrStdout()
	p.PrintBanner(out)
	fmt.Fprintln(out, "Press Ctrl-C to stop.")
	<-ctx.Done()
	fmt.Fprintln(out, "tributary pipeline: stopping")
	return nil
}

func runPipelineDemo(cmd *cobra.Command, o pipelineOptions) error {
	cfg, closeLog, err := o.config(cmd)
	if err != nil {
		return err
	}
	defer closeLog()
	ctx, stop := signalContext(cmd)
	defer stop()
	_, err = pipeline.Demo(ctx, cfg, pipeline.DemoOptions{Duration: o.duration, Drain: o.drain, Progress: o.progress}, cmd.OutOrStdout())
	return o.tablesError(err)
}

// tablesError names the flag of a metastore the pipeline refused or could
// not reach, in one line.
func (o pipelineOptions) tablesError(err error) error {
	if !errors.Is(err, pipeline.ErrTables) {
		return err
	}
	if o.compactInterval <= 0 {
		return badFlag("compact-interval", o.compactInterval.String(), "--hive-metastore needs compaction, which registers the tables: give a positive interval")
	}
	_, why, _ := strings.Cut(err.Error(), pipeline.ErrTables.Error()+": ")
	return badFlag("hive-metastore", o.hiveMetastore, strings.ReplaceAll(why, "\n", "; "))
}
