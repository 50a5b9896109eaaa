package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/jobs"
)

// jobsServeOptions are the flags of `tributary jobs serve`.
type jobsServeOptions struct {
	config         string
	zookeeper      string
	sessionTimeout time.Duration
	id             string
	metrics        string
	metricsConfig  string
	logLevel       string
}

func newJobsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "Schedule loader, compaction, retention and user jobs; inspect their history",
	}
	cmd.AddCommand(newJobsServeCommand())
	cmd.AddCommand(newJobsListCommand())
	cmd.AddCommand(newJobsHistoryCommand())
	cmd.AddCommand(newJobsRunCommand())
	cmd.AddCommand(newJobsPauseCommand(true))
	cmd.AddCommand(newJobsPauseCommand(false))
	cmd.AddCommand(newJobsCompactCommand())
	cmd.AddCommand(newJobsRetentionCommand())
	return cmd
}

func newJobsServeCommand() *cobra.Command {
	var o jobsServeOptions
	cmd := &cobra.Command{
		Use:   "serve --config jobs.yaml --zookeeper HOST:PORT[/chroot]",
		Short: "Run the job scheduler (any number of them can share one ZooKeeper)",
		Long: "Run the jobs of a YAML file on their schedules. Schedulers sharing a ZooKeeper start each due run " +
			"exactly once between them and keep each job's history there. Without --zookeeper the scheduler " +
			"coordinates in memory only (one process, history lost on exit). SIGTERM or SIGINT stops it, " +
			"killing runs still going (recorded failed).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runJobsServe(cmd, o) },
	}
	cmd.Flags().StringVar(&o.config, "config", "", "jobs YAML file (required)")
	cmd.Flags().StringVar(&o.zookeeper, "zookeeper", "", "ZooKeeper connect string HOST:PORT[,HOST:PORT...][/chroot]")
	cmd.Flags().DurationVar(&o.sessionTimeout, "zookeeper-session-timeout", 0, "ZooKeeper session timeout: how long a dead scheduler keeps its runs' locks (default 18s)")
	cmd.Flags().StringVar(&o.id, "id", "", "this scheduler's name in run history (default HOST:PID)")
	cmd.Flags().StringVar(&o.metrics, "metrics", "", "serve Prometheus metrics on HOST:PORT/metrics")
	cmd.Flags().StringVar(&o.metricsConfig, "metrics-config", "", "properties file with metrics.ssl.*, metrics.authentication.* and metrics.pprof.enable for --metrics")
	cmd.Flags().StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

func runJobsServe(cmd *cobra.Command, o jobsServeOptions) error {
	logger, err := newLogger(cmd, o.logLevel)
	if err != nil {
		return err
	}
	if o.config == "" {
		return errors.New("--config is required")
	}
	list, err := jobs.LoadConfig(o.config)
	if err != nil {
		return fmt.Errorf("%s: %w", o.config, err)
	}
	if o.zookeeper != "" {
		if _, _, err := zkcoord.ParseConnect(o.zookeeper); err != nil {
			return fmt.Errorf("--zookeeper: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	var connect coord.SessionFactory
	if o.zookeeper == "" {
		logger.Warn("no --zookeeper: coordinating in memory; run history is lost when the scheduler stops")
		srv := memcoord.NewServer()
		connect = func(context.Context) (coord.Session, error) { return srv.Connect(memcoord.Config{Logger: logger}), nil }
	} else {
		connect = func(ctx context.Context) (coord.Session, error) {
			return zkcoord.Connect(ctx, o.zookeeper, zkcoord.Config{SessionTimeout: o.sessionTimeout, Logger: logger})
		}
	}
	reg := prometheus.NewRegistry()
	sched, err := jobs.New(jobs.Config{Jobs: list, Connect: connect, ID: o.id, Logger: logger, Registerer: reg})
	if err != nil {
		return err
	}
	if o.metrics != "" {
		mc, err := metricsConfigFile(o.metricsConfig)
		if err != nil {
			return fmt.Errorf("--metrics-config: %w", err)
		}
		srv, err := network.ServeMetricsWith(ctx, o.metrics, reg, mc)
		if err != nil {
			return fmt.Errorf("--metrics: %w", err)
		}
		defer srv.Close()
		logger.Info("metrics listening", "addr", srv.Addr())
	}
	fmt.Fprintf(cmd.OutOrStdout(), "tributary jobs scheduler %s running %d jobs\n", sched.ID(), len(list))
	return sched.Run(ctx)
}
