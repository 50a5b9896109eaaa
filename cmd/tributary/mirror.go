package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/tributary/tributary/broker"
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
	return cmd
}

func runMirror(cmd *cobra.Command, o mirrorOptions) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	if o.config == "" {
		return errors.New("--config is required")
	}
	f, err := os.Open(o.config)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	props, err := broker.ReadProperties(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("config %s: %w", o.config, err)
	}
	for _, kv := range o.overrides {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("--override %q: want key=value", kv)
		}
		props[strings.TrimSpace(k)] = v
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
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("metrics.listen %s: %w", addr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		logger.Info("metrics listening", "addr", ln.Addr().String())
	}
	return m.Run(ctx)
}
