package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/loader"
)

// loaderOptions are the flags of `tributary loader run|serve`.
type loaderOptions struct {
	config      string
	overrides   []string
	summaryJSON string
	progress    string
	metrics     string
	logLevel    string
}

func newLoaderCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "loader",
		Short: "Load topics into HDFS or a local directory as Avro container files, exactly once",
	}
	var run, serve loaderOptions
	runCmd := &cobra.Command{
		Use:   "run --config loader.properties",
		Short: "Load every partition up to its end offset as of now, commit, exit",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runLoader(cmd, run, false) },
	}
	serveCmd := &cobra.Command{
		Use:   "serve --config loader.properties",
		Short: "Load continuously: a commit every commit.interval.ms (or commit.records)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runLoader(cmd, serve, true) },
	}
	for _, c := range []struct {
		cmd *cobra.Command
		o   *loaderOptions
	}{{runCmd, &run}, {serveCmd, &serve}} {
		c.cmd.Flags().StringVar(&c.o.config, "config", "", "the loader's properties file (required)")
		c.cmd.Flags().StringArrayVar(&c.o.overrides, "override", nil, "key=value overriding the file (repeatable)")
		c.cmd.Flags().StringVar(&c.o.logLevel, "log-level", "info", "debug, info, warn or error")
	}
	runCmd.Flags().StringVar(&run.summaryJSON, "summary-json", "", "also write the run summary as one JSON object to this file (\"-\": stdout)")
	runCmd.Flags().StringVar(&run.progress, "progress", "auto", "auto (a bar on a terminal, else a log line per partition commit), bar or log")
	serveCmd.Flags().StringVar(&serve.metrics, "metrics-listen", "", "serve Prometheus /metrics on this address (e.g. 127.0.0.1:9102)")
	cmd.AddCommand(runCmd, serveCmd, newLoaderHoursCommand())
	return cmd
}

func loaderConfig(o loaderOptions, logger *slog.Logger) (loader.Config, error) {
	props, err := readProperties(logger, o.config, o.overrides)
	if err != nil {
		return loader.Config{}, err
	}
	cfg, unknown, err := loader.ConfigFromProperties(props)
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", o.config, err)
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		if !isMetricsKey(k) { // read by runLoader
			logger.Warn("unknown loader property ignored", "key", k)
		}
	}
	cfg.Logger = logger
	if cfg.CrashAt, err = loader.ParseCrashPoint(os.Getenv(loader.CrashEnv)); err != nil {
		return cfg, fmt.Errorf("%s: %w", loader.CrashEnv, err)
	}
	return cfg, nil
}

func runLoader(cmd *cobra.Command, o loaderOptions, serve bool) error {
	logger, err := newLogger(cmd, o.logLevel)
	if err != nil {
		return err
	}
	cfg, err := loaderConfig(o, logger)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if serve {
		reg := prometheus.NewRegistry()
		cfg.Registerer = reg
		if o.metrics != "" {
			mc, err := metricsConfigFile(o.config)
			if err != nil {
				return err
			}
			srv, err := network.ServeMetricsWith(ctx, o.metrics, reg, mc)
			if err != nil {
				return fmt.Errorf("--metrics-listen: %w", err)
			}
			defer srv.Close()
			logger.Info("metrics listening", "addr", srv.Addr())
		}
	}
	l, err := loader.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer l.Close()
	if serve {
		l.OnCommit(func(ci loader.CommitInfo) { logCommit(logger, ci) })
		return l.Serve(ctx)
	}

	out := cmd.OutOrStdout()
	bar := o.progress == "bar" || (o.progress == "auto" && isTerminal(out))
	stopBar := func() {}
	if bar {
		stopBar = progressBar(out, l.Progress())
	} else {
		l.OnCommit(func(ci loader.CommitInfo) { logCommit(logger, ci) })
	}
	sum, err := l.Run(ctx)
	stopBar()
	var netErr net.Error
	unreachable := err != nil && sum.Partitions == 0 && errors.As(err, &netErr)
	if unreachable {
		// Nothing was loaded: the error alone, naming the addresses, and
		// no summary of zeros before it.
		err = fmt.Errorf("%w at %s: %w", errUnreachable, strings.Join(cfg.Brokers, ","), err)
	} else {
		fmt.Fprintf(out, "loader %s: %d records (%d record bytes), %d files (%d file bytes), %d errors, %d duplicates, %d partitions, %.1f s\n",
			cfg.Name, sum.Records, sum.RecordBytes, sum.Files, sum.FileBytes, sum.Errors, sum.Duplicates, sum.Partitions, sum.Seconds)
	}
	if o.summaryJSON != "" {
		b, _ := json.Marshal(sum)
		if o.summaryJSON == "-" {
			fmt.Fprintf(out, "%s\n", b)
		} else if werr := os.WriteFile(o.summaryJSON, append(b, '\n'), 0o644); werr != nil && err == nil {
			err = fmt.Errorf("--summary-json: %w", werr)
		}
	}
	if err != nil {
		return fmt.Errorf("loader %s: %w", cfg.Name, err)
	}
	return nil
}

func logCommit(logger *slog.Logger, ci loader.CommitInfo) {
	logger.Info("partition committed", "topic", ci.Topic, "partition", ci.Partition, "seq", ci.Seq,
		"offsets", fmt.Sprintf("%d-%d", ci.FirstOffset, ci.NextOffset-1), "records", ci.Records,
		"files", ci.Files, "file_bytes", ci.FileBytes, "errors", ci.Errors, "duplicates", ci.Duplicates)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressBar redraws one line every 200 ms until the returned stop.
func progressBar(w io.Writer, p *loader.Progress) func() {
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	draw := func() {
		records, bytes, errs, _, pdone, total := p.Snapshot()
		const width = 30
		filled := 0
		if total > 0 {
			filled = int(width * pdone / total)
		}
		mbs := float64(bytes) / 1e6 / max(time.Since(start).Seconds(), 1e-3)
		fmt.Fprintf(w, "\r[%s%s] %d/%d partitions, %d records, %.1f MB/s, %d errors ",
			strings.Repeat("#", filled), strings.Repeat(".", width-filled), pdone, total, records, mbs, errs)
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				draw()
			case <-done:
				draw()
				fmt.Fprintln(w)
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}
