package pipeline

import (
	"context"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/security"
	"github.com/tributary/tributary/mirror"

	"github.com/tributary/tributary/loader"
)

// startLoader runs the loader continuously in this process: a load cycle
// every LoadInterval, from the analytics cluster into the output.
func (p *Pipeline) startLoader(ctx context.Context) (*part, error) {
	if p.cfg.LoaderScheduled {
		return p.startScheduledLoader(ctx)
	}
	cc, err := p.clientConfig(AnalyticsCluster, "loader")
	if err != nil {
		return nil, err
	}
	l, err := loader.New(ctx, loader.Config{
		Name:              LoaderJob,
		Brokers:           cc.Brokers,
		Security:          cc.Security(),
		RegistryURL:       p.RegistryURL(),
		Registry:          p.registryClient("loader"),
		Topics:            regexp.QuoteMeta(p.cfg.Topic),
		OutputURI:         p.cfg.OutputURI(),
		HDFS:              p.cfg.HDFSOptions,
		CommitInterval:    p.cfg.LoadInterval,
		PartitionDuration: p.cfg.PartitionDuration,
		AuditCluster:      AnalyticsCluster,
		AuditWindow:       p.cfg.AuditWindow,
		Instance:          "pipeline-loader",
		Logger:            p.logger.With("part", "loader"),
	})
	if err != nil {
		return nil, err
	}
	l.OnCommit(func(ci loader.CommitInfo) {
		p.mu.Lock()
		p.loaderDup += ci.Duplicates
		p.mu.Unlock()
	})
	return p.runPart("loader", func(ctx context.Context) error {
		defer l.Close()
		return l.Serve(ctx)
	}), nil
}

// startMirror runs the mirror in this process: every datacenter into
// analytics, each source consumed by the paper's ZooKeeper consumer group
// on that datacenter's own coordination service (its memcoord server or
// its ZooKeeper chroot). The mirror tier counts what analytics
// acknowledged, under the analytics cluster's name.
func (p *Pipeline) startMirror(ctx context.Context) (*part, error) {
	var sources []mirror.SourceConfig
	for _, dc := range p.cfg.Datacenters {
		cc, err := p.clientConfig(dc, "mirror")
		if err != nil {
			return nil, err
		}
		sources = append(sources, mirror.SourceConfig{Name: dc, Brokers: cc.Brokers, Security: cc.Security(), Coordinator: p.clusters[dc].Connector()})
	}
	target, err := p.mirrorTarget()
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	p.mu.Lock()
	p.mirrorReg = reg
	p.mu.Unlock()
	mc := mirror.Config{
		Sources:              sources,
		TargetName:           AnalyticsCluster,
		TargetBrokers:        target.Brokers,
		TargetSecurity:       target.Security(),
		Topics:               regexp.QuoteMeta(p.cfg.Topic),
		GroupID:              MirrorGroup,
		TopicRefreshInterval: 2 * time.Second,
		CommitInterval:       time.Second,
		AuditWindow:          p.cfg.AuditWindow,
		AuditInterval:        p.cfg.AuditInterval,
		Instance:             "pipeline-mirror",
		Logger:               p.logger.With("part", "mirror"),
		// A registry per start: a restarted mirror registers its series
		// again.
		Registerer: reg,
	}
	counter, err := mirror.NewAuditCounter(ctx, mc)
	if err != nil {
		return nil, err
	}
	m, err := mirror.New(mc, counter)
	if err != nil {
		_ = counter.Close(ctx)
		return nil, err
	}
	return p.runPart("mirror", m.Run), nil
}

// mirrorTarget is how the mirror reaches analytics: secured, on its SSL
// listener with the mirror's client certificate (the issue's "SASL_SSL
// sources, an SSL target").
func (p *Pipeline) mirrorTarget() (network.ClientConfig, error) {
	if p.secure == nil {
		return p.clientConfig(AnalyticsCluster, "mirror")
	}
	cc := network.ClientConfig{Brokers: p.clusters[AnalyticsCluster].BootstrapOn(listenerMirror)}
	sec, err := p.secure.clientSecurity("mirror", security.SSL)
	return cc.Secured(sec), err
}

// MirrorMetrics returns the running (or last) mirror's Prometheus
// series (tributary_mirror_*), nil before the mirror first started.
func (p *Pipeline) MirrorMetrics() prometheus.Gatherer {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mirrorReg == nil {
		return nil
	}
	return p.mirrorReg
}

// DashboardURL returns the audit dashboard's URL, "" while it does not run.
func (p *Pipeline) DashboardURL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pt := p.parts["audit"]; pt != nil {
		return pt.info
	}
	return ""
}
