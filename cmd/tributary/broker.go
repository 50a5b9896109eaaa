package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/tributary/tributary/broker"
	"github.com/tributary/tributary/broker/config"
)

// brokerOptions are the flags of `tributary broker`.
type brokerOptions struct {
	config    string
	overrides []string
	logLevel  string
}

func newBrokerCommand() *cobra.Command {
	var o brokerOptions
	cmd := &cobra.Command{
		Use:   "broker --config server.properties [--override key=value ...]",
		Short: "Run a Kafka-protocol broker",
		Long: "Run a broker configured by a Kafka-style server.properties file. " +
			"--override key=value replaces one property (repeatable). " +
			"SIGTERM or SIGINT shuts it down gracefully.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBroker(cmd, o) },
	}
	cmd.Flags().StringVar(&o.config, "config", "", "server.properties file (required)")
	cmd.Flags().StringArrayVar(&o.overrides, "override", nil, "key=value overriding one property")
	cmd.Flags().StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

func runBroker(cmd *cobra.Command, o brokerOptions) error {
	logger, err := newLogger(cmd, o.logLevel)
	if err != nil {
		return err
	}
	props, err := readPropertiesFile(o.config, o.overrides)
	if err != nil {
		return err
	}
	cfg, warnings, err := config.FromProperties(props)
	for _, w := range warnings {
		logger.Warn(w)
	}
	if err != nil {
		return err
	}
	if cfg.Cleaner.StepHook, err = config.ParseCleanerCrashPoint(os.Getenv(config.CleanerCrashEnv)); err != nil {
		return fmt.Errorf("%s: %w", config.CleanerCrashEnv, err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	b, err := broker.New(cfg, logger, reg)
	if err != nil {
		return err
	}
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return b.Serve(ctx)
}
