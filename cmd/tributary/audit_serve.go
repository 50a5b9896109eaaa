package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/audit/service"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/loader"
)

type auditServeOptions struct {
	config         string
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
	loaderOutput   string
	loaderJob      string
	loaderDelay    time.Duration
	hdfsConfig     string
}

func newAuditServeCommand() *cobra.Command {
	o := &auditServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Consume the audit topic of every cluster and serve reports, /metrics and a dashboard",
		Long: "serve reads the audit topic of each --cluster from where it left off, keeps the sums in\n" +
			"a store under --dir, and serves the HTTP API, /metrics and the dashboard on --listen.\n" +
			"--config names a properties file with the listener's TLS (ssl.keystore.*, ssl.truststore.*,\n" +
			"ssl.client.authentication) and basic authentication (authentication.method=BASIC,\n" +
			"authentication.users.file, authentication.realm, authentication.roles), as the registry's.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := o.serviceConfig()
			if err != nil {
				return err
			}
			if cfg.Security, err = auditSecurity(o.config); err != nil {
				return err
			}
			if cfg.Logger, err = newLogger(cmd, o.logLevel); err != nil {
				return err
			}
			reg := prometheus.NewRegistry()
			cfg.Registerer, cfg.Gatherer = reg, reg
			ctx, cancel := signalContext(cmd)
			defer cancel()
			if o.loaderOutput != "" {
				closeFS, err := o.readiness(ctx, &cfg)
				if err != nil {
					return err
				}
				defer closeFS()
			}
			svc, err := service.New(cfg)
			if err != nil {
				return err
			}
			return svc.Run(ctx)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.config, "config", "", "properties file with the HTTP listener's ssl.* and authentication.* keys")
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
	fs.StringVar(&o.loaderOutput, "loader-output", "", "the loader's output.uri: serve its partitions' readiness at /api/topics/{topic}/partitions")
	fs.StringVar(&o.loaderJob, "loader-job", "", "the loader job (its name) whose commits close partitions (with --loader-output)")
	fs.DurationVar(&o.loaderDelay, "loader-delay", compact.DefaultDelay, "the compact job's delay past a partition's end")
	fs.StringVar(&o.hdfsConfig, "hdfs-config", "", "properties file with the HDFS client keys of --loader-output")
	return cmd
}

// readiness opens the loader output for the partitions endpoint.
func (o *auditServeOptions) readiness(ctx context.Context, cfg *service.Config) (func(), error) {
	if o.loaderJob == "" {
		return nil, errors.New("--loader-job is required with --loader-output")
	}
	hdfsOpts, err := readHDFSConfig(o.hdfsConfig)
	if err != nil {
		return nil, err
	}
	fsys, base, err := filesys.OpenWith(ctx, o.loaderOutput, hdfsOpts.WithLogger(cfg.Logger))
	if err != nil {
		return nil, fmt.Errorf("--loader-output: %w", err)
	}
	cfg.Readiness = &service.Readiness{FS: fsys, Base: base, Delay: o.loaderDelay,
		ClosedThrough: func(ctx context.Context) (time.Time, error) {
			return loader.CommittedThrough(ctx, fsys, base, o.loaderJob)
		}}
	return func() { fsys.Close() }, nil
}

// auditSecurity loads the ssl.* and authentication.* keys of path; nil
// (plain, anonymous) without a file.
func auditSecurity(path string) (*network.HTTPSecurity, error) {
	if path == "" {
		return nil, nil
	}
	props, err := readPropertiesFile(path, nil)
	if err != nil {
		return nil, err
	}
	p := properties.New(props)
	hc := network.HTTPConfigFromProperties(p, "")
	if err := p.Err(); err != nil {
		return nil, fmt.Errorf("%w: --config %s: %w", errBadFlag, path, err)
	}
	if u := p.Unknown(); len(u) > 0 {
		return nil, fmt.Errorf("%w: --config %s: unknown keys %s", errBadFlag, path, strings.Join(u, ", "))
	}
	sec, err := hc.Load()
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	return sec, nil
}

func (o *auditServeOptions) serviceConfig() (service.Config, error) {
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
