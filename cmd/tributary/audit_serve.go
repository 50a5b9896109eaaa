package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/audit/service"
	"github.com/tributary/tributary/internal/network"
)

type auditServeOptions struct {
	clusters       []string
	commandConfig  string
	clusterConfigs []string
	listen         string
	dir            string
	grace          int
	maxFuture      time.Duration
	retention      time.Duration
	topic          string
	logLevel       string
}

func newAuditServeCommand() *cobra.Command {
	o := &auditServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Consume the audit topic of every cluster and serve reports, /metrics and a dashboard",
		Long: "serve reads the audit topic of each --cluster from where it left off, keeps the sums in\n" +
			"a store under --dir, and serves the HTTP API, /metrics and the dashboard on --listen.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := o.config()
			if err != nil {
				return err
			}
			if cfg.Logger, err = newLogger(cmd, o.logLevel); err != nil {
				return err
			}
			reg := prometheus.NewRegistry()
			cfg.Registerer, cfg.Gatherer = reg, reg
			svc, err := service.New(cfg)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext(cmd)
			defer cancel()
			return svc.Run(ctx)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&o.clusters, "cluster", nil, "NAME=HOST:PORT[,HOST:PORT...]: a cluster whose audit topic to consume (repeatable, at least one)")
	fs.StringVar(&o.commandConfig, "command-config", "",
		"Kafka client properties FILE with the security settings (security.protocol, ssl.*, sasl.*) for every --cluster")
	fs.StringArrayVar(&o.clusterConfigs, "cluster-config", nil,
		"NAME=FILE: the security settings of cluster NAME, instead of --command-config's (repeatable)")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8090", "HTTP address for the API, /metrics and the dashboard")
	fs.StringVar(&o.dir, "dir", "", "directory of the audit store (required)")
	fs.IntVar(&o.grace, "grace", service.DefaultGrace, "a window closes once no tier reported on it for this many windows after its end")
	fs.DurationVar(&o.maxFuture, "max-future", service.DefaultMaxFuture, "skip events whose window starts further than this after now")
	fs.DurationVar(&o.retention, "retention", service.DefaultRetention, "keep windows (and their event ids) this long after they start; older events are skipped")
	fs.StringVar(&o.topic, "audit-topic", audit.DefaultTopic, "the audit topic")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

func (o *auditServeOptions) config() (service.Config, error) {
	cfg := service.Config{Listen: o.listen, Dir: o.dir, Grace: o.grace, MaxFuture: o.maxFuture, Retention: o.retention, Topic: o.topic}
	if len(o.clusters) == 0 {
		return cfg, fmt.Errorf("%w: --cluster NAME=HOST:PORT is required", errBadFlag)
	}
	for _, c := range o.clusters {
		name, addrs, ok := strings.Cut(c, "=")
		if !ok || name == "" || addrs == "" {
			return cfg, badFlag("cluster", c, "want NAME=HOST:PORT[,HOST:PORT...]")
		}
		cl := service.Cluster{Name: name}
		for _, a := range strings.Split(addrs, ",") {
			if a = strings.TrimSpace(a); a != "" {
				cl.Brokers = append(cl.Brokers, a)
			}
		}
		cfg.Clusters = append(cfg.Clusters, cl)
	}
	if err := o.security(cfg.Clusters); err != nil {
		return cfg, err
	}
	if o.dir == "" {
		return cfg, fmt.Errorf("%w: --dir is required", errBadFlag)
	}
	if o.grace < 1 {
		return cfg, badFlag("grace", fmt.Sprint(o.grace), "must be >= 1 window")
	}
	if o.maxFuture <= 0 {
		return cfg, badFlag("max-future", o.maxFuture.String(), "must be positive")
	}
	if o.retention <= 0 {
		return cfg, badFlag("retention", o.retention.String(), "must be positive")
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%w: %w", errBadFlag, err)
	}
	return cfg, nil
}

// security sets each cluster's security from --cluster-config NAME=FILE,
// or --command-config FILE for the others.
func (o *auditServeOptions) security(clusters []service.Cluster) error {
	var common network.Security
	if o.commandConfig != "" {
		c, err := readCommandConfig(o.commandConfig)
		if err != nil {
			return err
		}
		common = c.Security()
	}
	own := map[string]network.Security{}
	for _, cc := range o.clusterConfigs {
		name, file, ok := strings.Cut(cc, "=")
		if !ok || name == "" || file == "" {
			return badFlag("cluster-config", cc, "want NAME=FILE")
		}
		c, err := readCommandConfig(file)
		if err != nil {
			return fmt.Errorf("--cluster-config %s: %w", name, err)
		}
		own[name] = c.Security()
	}
	for i := range clusters {
		s, ok := own[clusters[i].Name]
		if !ok {
			s = common
		}
		delete(own, clusters[i].Name)
		clusters[i].Security = s
	}
	for name := range own {
		return badFlag("cluster-config", name, "no --cluster of that name")
	}
	return nil
}
