package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/devcluster"
)

// devOptions are the flags of `tributary dev`.
type devOptions struct {
	dir        string
	brokers    int
	host       string
	port       int
	partitions int32
	registry   string
	logLevel   string
}

func newDevCommand() *cobra.Command {
	var o devOptions
	cmd := &cobra.Command{
		Use:   "dev [--dir DIR] [--brokers N] [--port 9092] [--registry HOST:PORT]",
		Short: "Run a whole cluster in one process, for development",
		Long: "Run N brokers (ids 1..N, ports PORT..PORT+N-1) in this process on in-process " +
			"coordination, with their data under DIR/broker-<id>, and optionally the schema registry. " +
			"Topics are kept across restarts on the same DIR, each partition served by the broker holding its data " +
			"(so keep N at least as large as before). --port 0 picks free ports. " +
			"SIGTERM or SIGINT shuts everything down gracefully.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDev(cmd, o) },
	}
	cmd.Flags().StringVar(&o.dir, "dir", "tributary-dev-data", "data directory (created if missing)")
	cmd.Flags().IntVar(&o.brokers, "brokers", 1, "number of brokers")
	cmd.Flags().StringVar(&o.host, "host", "127.0.0.1", "address the brokers listen on and advertise")
	cmd.Flags().IntVar(&o.port, "port", 9092, "port of the first broker; the others follow (0: free ports)")
	cmd.Flags().Int32Var(&o.partitions, "partitions", config.DefaultNumPartitions, "num.partitions of auto-created topics")
	cmd.Flags().StringVar(&o.registry, "registry", "", "also serve the schema registry on HOST:PORT (e.g. 127.0.0.1:8081)")
	cmd.Flags().StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

func (o devOptions) validate() error {
	switch {
	case o.brokers < 1 || o.brokers > 64:
		return fmt.Errorf("--brokers %d: want 1 to 64", o.brokers)
	case o.port < 0 || o.port+o.brokers-1 > 65535:
		return fmt.Errorf("--port %d: the ports up to %d must be valid", o.port, o.port+o.brokers-1)
	case strings.TrimSpace(o.dir) == "":
		return errors.New("--dir is required")
	case o.partitions < 1:
		return fmt.Errorf("--partitions %d: must be >= 1", o.partitions)
	case strings.ContainsAny(o.host, "/ "):
		return fmt.Errorf("--host %q: not a host name", o.host)
	}
	if o.registry != "" {
		if _, _, err := net.SplitHostPort(o.registry); err != nil {
			return fmt.Errorf("--registry %q: %v", o.registry, err)
		}
	}
	return nil
}

func runDev(cmd *cobra.Command, o devOptions) (err error) {
	logger, err := newLogger(cmd, o.logLevel)
	if err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	c, err := devcluster.Start(ctx, devcluster.Config{
		Dir:        dir,
		Brokers:    o.brokers,
		Host:       o.host,
		Port:       o.port,
		Partitions: o.partitions,
		Registry:   o.registry,
		Logger:     logger,
	})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, c.Close()) }()
	printDevBanner(cmd.OutOrStdout(), dir, c.Bootstrap(), c.RegistryURL())
	<-ctx.Done()
	logger.Info("tributary dev shutting down")
	return nil
}

func printDevBanner(w io.Writer, dir string, addrs []string, regURL string) {
	bs := strings.Join(addrs, ",")
	fmt.Fprintf(w, "tributary dev: %d broker(s) on in-process coordination, data in %s\n", len(addrs), dir)
	for i, a := range addrs {
		fmt.Fprintf(w, "  broker %d  %s\n", i+1, a)
	}
	fmt.Fprintf(w, "bootstrap: %s\n", bs)
	if regURL != "" {
		fmt.Fprintf(w, "schema registry: %s\n", regURL)
	}
	fmt.Fprintf(w, `
Connect with kcat:
  kcat -b %[1]s -L
  echo hello | kcat -b %[1]s -P -t greetings
  kcat -b %[1]s -C -t greetings -o beginning -e
or with tributary:
  %[2]s topics create --bootstrap %[1]s --topic greetings --partitions 3
  echo hello | %[2]s produce --bootstrap %[1]s --topic greetings
  %[2]s consume --bootstrap %[1]s --topic greetings --offset earliest
Press Ctrl-C to stop.
`, bs, invokedAs())
}
