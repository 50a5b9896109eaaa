package main

import (
	"context"
	"fmt"
	"os/signal"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/mirror"
)

// mirrorOptions are the flags of `tributary mirror`.
type mirrorOptions struct {
	config    string
	overrides []string
	logLevel  string
}

func newMirrorCommand() *cobra.Command {
	var o mirrorOptions
	cmd := &cobra.Command{
		Use:   "mirror --config mirror.properties [--override key=value ...]",
		Short: "Mirror source clusters' topics into a target cluster",
		Long: "Run a mirror daemon configured by a Kafka-style properties file " +
			"(source.NAME.bootstrap.servers, target.bootstrap.servers, topics, group.id, ...; " +
			"see the README). --override key=value replaces one property (repeatable). " +
			"SIGTERM or SIGINT drains in-flight records, commits and exits.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMirror(cmd, o) },
	}
	cmd.Flags().StringVar(&o.config, "config", "", "mirror.properties file (required)")
	cmd.Flags().StringArrayVar(&o.overrides, "override", nil, "key=value overriding one property")
	cmd.Flags().StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	cmd.AddCommand(newMirrorTranslateCommand())
	return cmd
}

func runMirror(cmd *cobra.Command, o mirrorOptions) error {
	logger, err := newLogger(cmd, o.logLevel)
	if err != nil {
		return err
	}
	props, err := readPropertiesFile(o.config, o.overrides)
	if err != nil {
		return err
	}
	cfg, unknown, err := mirror.ConfigFromProperties(props)
	if err != nil {
		return err
	}
	for _, k := range unknown {
		logger.Warn("unknown property ignored", "key", k)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg.Logger, cfg.Registerer = logger, reg

	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	counter, err := mirror.NewAuditCounter(ctx, cfg)
	if err != nil {
		return err
	}
	m, err := mirror.New(cfg, counter)
	if err != nil {
		return err
	}
	if addr := strings.TrimSpace(props["metrics.listen"]); addr != "" {
		mc, err := metricsConfig(props)
		if err != nil {
			return err
		}
		srv, err := network.ServeMetricsWith(ctx, addr, reg, mc)
		if err != nil {
			return fmt.Errorf("metrics.listen %s: %w", addr, err)
		}
		defer srv.Close()
		logger.Info("metrics listening", "addr", srv.Addr())
	}
	return m.Run(ctx)
}
