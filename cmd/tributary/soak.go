package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary/tributary/client"
	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/soak"
)

type soakOptions struct {
	dir        string
	repo       string
	python     string
	duration   time.Duration
	rate       float64
	seed       int64
	drain      time.Duration
	skipDedup  bool
	secure     bool
	noSchedule bool
	logLevel   string
}

func newSoakCommand() *cobra.Command {
	var o soakOptions
	cmd := &cobra.Command{
		Use:   "soak [--duration 10m] [--seed N]",
		Short: "Run every part of the pipeline as its own process under faults, and prove nothing was lost or doubled",
		Long: "Start, as separate processes of this binary, three clusters (dc1, dc2, analytics) of 3 brokers each " +
			"on a 3-node ZooKeeper ensemble and HDFS with 2 DataNodes (scripts/zk.sh and testing/hdfs/start.sh of --repo), " +
			"2 schema registries, the audit service, 2 mirrors reaching the datacenters through a proxied link, 2 loader " +
			"processes and 2 job schedulers of one loader job, and a load generator per datacenter; inject a random fault " +
			"schedule (printed seed) of SIGKILLs, SIGSTOPs, ZooKeeper, DataNode and link faults while producing for " +
			"--duration; then drain, read everything back and print a summary table and one line. Exits non-zero unless " +
			"every acknowledged record was mirrored and loaded exactly once and every closed audit window is complete.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSoak(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "directory for every process's data, configuration and log (default: a new temporary directory)")
	f.StringVar(&o.repo, "repo", ".", "the repository checkout: its scripts/zk.sh and testing/hdfs/ run ZooKeeper and HDFS")
	f.StringVar(&o.python, "python", "", "Python with fastavro, the independent reader of the loaded files (default $TRIBUTARY_TEST_PYTHON)")
	f.DurationVar(&o.duration, "duration", soak.DefaultDuration, "how long the producers run (a short run goes on until every fault kind happened once)")
	f.Float64Var(&o.rate, "rate", soak.DefaultRate, "page views per second per datacenter")
	f.Int64Var(&o.seed, "seed", 0, "the fault schedule's seed (0: a random one, printed)")
	f.DurationVar(&o.drain, "drain-timeout", 5*time.Minute, "how long to wait, after the producers stop, for everything to be loaded and audited")
	f.BoolVar(&o.skipDedup, "inject-skip-dedup", false, "inject a bug: the loaders keep the first mirror duplicate they see (the soak must fail)")
	f.BoolVar(&o.secure, "secure", false, "run every part secured: SASL_SSL (SCRAM) and ACLs on every cluster, ZooKeeper ACLs, HTTPS with basic authentication for the registries and the audit service, Kerberized HDFS")
	f.BoolVar(&o.noSchedule, "no-scheduler", false, "leave out the two job schedulers")
	f.StringVar(&o.logLevel, "log-level", "warn", "the harness's own log level: debug, info, warn or error")
	cmd.AddCommand(newSoakProduceCommand())
	return cmd
}

func runSoak(cmd *cobra.Command, o soakOptions) error {
	logger, err := newLogger(cmd, o.logLevel)
	if err != nil {
		return err
	}
	if !cmd.Flags().Changed("python") {
		// Read here, not as the flag's default: the help (and the generated
		// CLI reference) must not show this machine's path.
		o.python = os.Getenv("TRIBUTARY_TEST_PYTHON")
	}
	switch {
	case o.duration <= 0:
		return badFlag("duration", o.duration.String(), "want a positive duration")
	case o.rate <= 0:
		return badFlag("rate", fmt.Sprint(o.rate), "want a positive rate")
	case o.python == "":
		return badFlag("python", "", "a Python with fastavro is required (make deps makes one; TRIBUTARY_TEST_PYTHON)")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(repo, "scripts", "zk.sh")); err != nil {
		return badFlag("repo", o.repo, "no scripts/zk.sh there: give the repository checkout")
	}
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "tributary-soak-"); err != nil {
			return err
		}
	}
	ctx, cancel := signalContext(cmd)
	defer cancel()
	res, err := soak.Run(ctx, soak.Config{
		Executable: exe, Repo: repo, Dir: dir, Python: o.python,
		Duration: o.duration, Rate: o.rate, Seed: o.seed, Drain: o.drain,
		SkipDedupOnce: o.skipDedup, Secure: o.secure, NoScheduler: o.noSchedule,
		Out: cmd.OutOrStdout(), Logger: logger,
	})
	if err != nil {
		return err
	}
	if !res.OK() {
		return errors.New("soak failed: " + res.Line())
	}
	return nil
}

type soakProduceOptions struct {
	bootstrap     string
	registry      string
	datacenter    string
	topic         string
	rate          float64
	auditWindow   time.Duration
	auditInterval time.Duration
	stats         string
	commandConfig string
}

// newSoakProduceCommand is the soak's load generator: one datacenter's
// page-view producer (acks=all, idempotent, audited as tier producer)
// reporting what was acknowledged to a file.
func newSoakProduceCommand() *cobra.Command {
	var o soakProduceOptions
	cmd := &cobra.Command{
		Use:   "produce --bootstrap HOST:PORT --registry URL --datacenter DC --stats FILE",
		Short: "The soak's load generator: page views at a steady rate, what was acknowledged written to --stats",
		Long: "Send Avro page views (producer, gap-free seq) at --rate to --topic with acks=all until SIGTERM or SIGINT, " +
			"audited as tier producer of cluster --datacenter; every second, and once more after the last acknowledgement, " +
			"write {producer, Sent, Acked, Failed, FailedSeqs, final} as JSON to --stats (atomically).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			return runSoakProduce(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.bootstrap, "bootstrap", "", "the datacenter's brokers (required)")
	f.StringVar(&o.registry, "registry", "", "the schema registry's URL (required)")
	f.StringVar(&o.datacenter, "datacenter", "", "the datacenter's name (required)")
	f.StringVar(&o.topic, "topic", pipeline.DefaultTopic, "page-view topic")
	f.Float64Var(&o.rate, "rate", soak.DefaultRate, "page views per second")
	f.DurationVar(&o.auditWindow, "audit-window", 10*time.Minute, "audit window (every tier's must match)")
	f.DurationVar(&o.auditInterval, "audit-interval", 30*time.Second, "how often audit counts are published")
	f.StringVar(&o.stats, "stats", "", "file the report is written to (required)")
	f.StringVar(&o.commandConfig, "command-config", "",
		"properties FILE with the Kafka client security keys (security.protocol, ssl.*, sasl.*) and the registry client's (basic.auth.user.info, schema.registry.ssl.*)")
	return cmd
}

func runSoakProduce(ctx context.Context, o soakProduceOptions) error {
	for _, req := range []struct{ name, v string }{{"bootstrap", o.bootstrap}, {"registry", o.registry}, {"datacenter", o.datacenter}, {"stats", o.stats}} {
		if req.v == "" {
			return badFlag(req.name, "", "required")
		}
	}
	if o.rate <= 0 {
		return badFlag("rate", fmt.Sprint(o.rate), "want a positive rate")
	}
	if err := checkTopicName(o.topic); err != nil {
		return err
	}
	sec, reg, err := soakProduceSecurity(o.commandConfig)
	if err != nil {
		return err
	}
	if err := checkSoakTopic(ctx, o, sec); err != nil {
		return err
	}
	p, err := pipeline.NewProducer(pipeline.ProducerConfig{
		Brokers: strings.Split(o.bootstrap, ","), Security: sec, RegistryURL: o.registry, Registry: reg, Datacenter: o.datacenter,
		Topic: o.topic, Rate: o.rate,
		Audit: client.ProducerAudit{Cluster: o.datacenter, Window: o.auditWindow, Interval: o.auditInterval},
	})
	if err != nil {
		return err
	}
	var mu sync.Mutex // one writer at a time; nothing after the final report
	var finished bool
	write := func(st pipeline.ProducerStats, final bool, runErr error) error {
		mu.Lock()
		defer mu.Unlock()
		if finished {
			return nil
		}
		finished = final
		r := soak.ProducerReport{ProducerStats: st, Datacenter: o.datacenter, Final: final}
		if runErr != nil {
			r.Error = runErr.Error()
		}
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		tmp := o.stats + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, o.stats)
	}
	if err := write(p.Stats(), false, nil); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = write(p.Stats(), false, nil)
			}
		}
	}()
	st, runErr := p.Run(ctx, 2*time.Minute)
	close(done)
	if err := write(st, true, runErr); err != nil {
		return err
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		// The report holds it too; the exit status says it to a shell.
		return fmt.Errorf("soak produce: %w", runErr)
	}
	return nil
}

// checkSoakTopic fails at once, as produce does, when the brokers cannot be
// reached or the topic does not exist and will not be created: the producer
// would otherwise run until stopped with every record failing.
func checkSoakTopic(ctx context.Context, o soakProduceOptions, sec network.Security) error {
	co := clientOptions{bootstrap: o.bootstrap, requestTimeout: defaultRequestTimeout}
	if err := co.validate(); err != nil {
		return err
	}
	cl, err := network.NewClient(co.connection().Secured(sec))
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = producibleTopic(ctx, &co, cl, o.topic)
	return err
}

// soakProduceSecurity reads --command-config: the Kafka client's security
// and the registry client's credentials and TLS; plain without a file.
func soakProduceSecurity(path string) (network.Security, serde.ClientConfig, error) {
	if path == "" {
		return network.Security{}, serde.ClientConfig{}, nil
	}
	props, err := readPropertiesFile(path, nil)
	if err != nil {
		return network.Security{}, serde.ClientConfig{}, fmt.Errorf("%w: --command-config: %w", errBadFlag, err)
	}
	p := properties.New(props)
	sec, err := network.SecurityFromProperties(p, "")
	reg := serde.ClientConfigFromProperties(p, "")
	if err = errors.Join(err, p.Err()); err != nil {
		return network.Security{}, serde.ClientConfig{}, fmt.Errorf("%w: --command-config %s: %w", errBadFlag, path, err)
	}
	return sec, reg, nil
}
