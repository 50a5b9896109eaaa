package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/schema/registry"
)

// registryOptions are the flags of `tributary registry`.
type registryOptions struct {
	config         string
	listen         string
	zookeeper      string
	compatibility  string
	sessionTimeout time.Duration
	logLevel       string
}

func newRegistryCommand() *cobra.Command {
	var o registryOptions
	cmd := &cobra.Command{
		Use:   "registry [--config registry.properties] [--listen HOST:PORT] [--zookeeper HOST:PORT[/chroot]]",
		Short: "Run the schema registry (Confluent Schema Registry REST API)",
		Long: "Run a schema registry serving the Confluent Schema Registry REST API. " +
			"With --zookeeper, schemas live in ZooKeeper under /schema_registry and any number of " +
			"registry processes share them; without it they live in memory and are lost on exit. " +
			"--config reads Confluent Schema Registry's keys (listeners=https://HOST:PORT, ssl.*, " +
			"ssl.client.authentication, authentication.method=BASIC, authentication.users.file, " +
			"authentication.roles, authorization.roles.ROLE=read|write|admin, schema.compatibility.level, " +
			"zookeeper.connect); the flags, when given, override it. " +
			"SIGTERM or SIGINT shuts it down gracefully.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRegistry(cmd, o) },
	}
	cmd.Flags().StringVar(&o.config, "config", "", "registry.properties with Confluent Schema Registry's keys (TLS, basic authentication)")
	cmd.Flags().StringVar(&o.listen, "listen", "127.0.0.1:8081", "address to serve HTTP on (overrides the config's listeners)")
	cmd.Flags().StringVar(&o.zookeeper, "zookeeper", "", "ZooKeeper connect string HOST:PORT[,HOST:PORT...][/chroot]; empty keeps schemas in memory")
	cmd.Flags().StringVar(&o.compatibility, "compatibility", "", "global compatibility level until one is set through /config (default BACKWARD)")
	cmd.Flags().DurationVar(&o.sessionTimeout, "zookeeper-session-timeout", 0, "ZooKeeper session timeout (default 18s)")
	cmd.Flags().StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

func runRegistry(cmd *cobra.Command, o registryOptions) error {
	logger, err := newLogger(cmd, o.logLevel)
	if err != nil {
		return err
	}
	var sc registry.ServerConfig
	if o.config != "" {
		var warnings []string
		if sc, warnings, err = registry.ReadServerConfig(o.config); err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		for _, w := range warnings {
			logger.Warn(w, "config", o.config)
		}
	}
	flags := cmd.Flags()
	if sc.Listen == "" || flags.Changed("listen") {
		sc.Listen = o.listen
	}
	if flags.Changed("zookeeper") {
		sc.ZooKeeper = o.zookeeper
	}
	cfg := registry.Config{Logger: logger, DefaultCompatibility: sc.Compatibility}
	if o.compatibility != "" {
		l, err := registry.ParseLevel(o.compatibility)
		if err != nil {
			return fmt.Errorf("--compatibility: %w", err)
		}
		cfg.DefaultCompatibility = l
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	sec, err := sc.HTTP.Load()
	if err != nil {
		return fmt.Errorf("--config %s: %w", o.config, err)
	}

	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	var (
		store   registry.Store
		expired <-chan struct{}
	)
	if sc.ZooKeeper == "" {
		logger.Warn("no --zookeeper: schemas are kept in memory only and are lost when the registry stops")
		store = registry.NewMemStore()
	} else {
		sess, err := zkcoord.Connect(ctx, sc.ZooKeeper, zkcoord.Config{SessionTimeout: o.sessionTimeout, Logger: logger})
		if err != nil {
			return fmt.Errorf("zookeeper: %w", err)
		}
		defer sess.Close()
		cs, err := registry.NewCoordStore(ctx, sess, registry.CoordConfig{Logger: logger})
		if err != nil {
			return fmt.Errorf("zookeeper store: %w", err)
		}
		store = cs
		expired = watchExpiry(ctx, sess)
	}
	defer store.Close()

	reg, err := registry.New(store, cfg)
	if err != nil {
		return err
	}
	srv, err := network.StartSecureHTTP(ctx, sc.Listen, reg.Handler(), sec, registry.Need)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	if sec.Auth == nil {
		logger.Warn("no authentication.method=BASIC: anyone who reaches the registry may register and delete schemas")
	}
	fmt.Fprintf(cmd.OutOrStdout(), "tributary registry listening on %s://%s\n", sec.Scheme(), srv.Addr())

	var runErr error
	select {
	case <-ctx.Done():
		logger.Info("schema registry shutting down")
	case <-expired:
		// The store cannot serve without its session; exit so that a
		// supervisor restarts the process on a new one.
		runErr = errors.New("zookeeper session expired")
	case <-srv.Done():
		return fmt.Errorf("serve: %w", srv.Err())
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && runErr == nil {
		runErr = fmt.Errorf("shutdown: %w", err)
	}
	return runErr
}

// watchExpiry closes the returned channel when the session expires.
func watchExpiry(ctx context.Context, sess coord.Session) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case st := <-sess.States():
				if st == coord.StateExpired {
					close(done)
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return done
}
