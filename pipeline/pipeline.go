package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/audit/service"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/client"
	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/devcluster"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/jobs/tables"
	"github.com/tributary/tributary/pipeline/pageview"
)

// stopTimeout bounds each part's graceful stop.
const stopTimeout = 45 * time.Second

// brokerMaxIdle is every broker's connections.max.idle.ms.
const brokerMaxIdle = 20 * time.Second

// Pipeline is a running pipeline. Its methods are safe for concurrent use.
type Pipeline struct {
	cfg    Config
	dir    string
	logger *slog.Logger
	// life outlives every part: clusters serve until Close cancels it,
	// after the parts that use them stopped.
	life       context.Context
	lifeCancel context.CancelFunc

	clusters map[string]*devcluster.Cluster
	secure   *secureSetup // nil unless Config.Secure
	fsys     filesys.FS
	base     string
	// tables is the metastore of Config.HiveMetastoreURIs (nil without).
	tables    *tables.Metastore
	tablesCfg tables.Config

	// filesMu keeps compaction passes and reading the output apart.
	filesMu sync.Mutex

	mu        sync.Mutex
	producers []*producerRun
	parts     map[string]*part // "mirror", "loader", "audit", "compact"
	closed    bool
	stopped   []ProducerStats // producers stopped by StopProducers
	loaderDup int64           // duplicates the loader dropped (mirror re-sends)
	svc       *service.Service
	dashboard string               // the audit service's address, kept across restarts
	mirrorReg *prometheus.Registry // the mirror's metrics, new at every start
}

// producerRun is one datacenter's running producer.
type producerRun struct {
	dc     string
	p      *Producer
	cancel context.CancelFunc
	done   chan struct{}
	stats  ProducerStats
	err    error
}

// part is a restartable component running on its own goroutine.
type part struct {
	name   string
	cancel context.CancelFunc
	done   chan error
	info   string // where it listens, for the banner
}

// Start starts every part and returns once all of them run. ctx bounds
// start-up only; the pipeline runs until Close.
func Start(ctx context.Context, cfg Config) (_ *Pipeline, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("%w: dir: %v", ErrInvalidConfig, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("dir: %w", err)
	}
	cfg.Dir = dir
	life, lifeCancel := context.WithCancel(context.Background())
	p := &Pipeline{
		cfg: cfg, dir: dir, logger: cfg.Logger, life: life, lifeCancel: lifeCancel,
		clusters: map[string]*devcluster.Cluster{}, parts: map[string]*part{},
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.Close())
		}
	}()
	if cfg.Secure {
		if p.secure, err = newSecureSetup(cfg); err != nil {
			return nil, err
		}
	}
	if err := p.startClusters(ctx); err != nil {
		return nil, err
	}
	if err := p.openTables(ctx); err != nil {
		return nil, err
	}
	if err := p.createTopics(ctx); err != nil {
		return nil, err
	}
	p.fsys, p.base, err = filesys.OpenWith(ctx, cfg.OutputURI(), cfg.HDFSOptions.WithLogger(cfg.Logger))
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", cfg.OutputURI(), err)
	}
	for _, name := range []string{"audit", "loader", "mirror", "compact"} {
		if err := p.StartPart(ctx, name); err != nil {
			return nil, err
		}
	}
	if cfg.Rate > 0 {
		for _, dc := range cfg.Datacenters {
			if err := p.startProducer(ctx, dc); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

func (p *Pipeline) startClusters(ctx context.Context) error {
	for i, name := range p.cfg.clusters() {
		port := 0
		if p.cfg.Port > 0 {
			port = p.cfg.Port + 100*i
		}
		dc := devcluster.Config{
			Name:       name,
			Dir:        filepath.Join(p.dir, name),
			Brokers:    p.cfg.Brokers,
			Host:       p.cfg.Host,
			Port:       port,
			Partitions: p.cfg.Partitions,
			ZooKeeper:  p.cfg.zooKeeperFor(name),
			Logger:     p.logger,
			// A short connections.max.idle.ms bounds how long stopping a
			// broker (a fault, or Close) can wait on a connection whose
			// read deadline was re-armed just as the broker set it to
			// "now" to unblock it; clients reconnect transparently.
			Broker: func(bc *config.Config) { bc.Limits.ConnectionsMaxIdle = brokerMaxIdle },
		}
		// One registry for the whole pipeline, on the analytics cluster's
		// coordination: producers in every datacenter and the loader must
		// agree on schema ids.
		if name == AnalyticsCluster {
			dc.Registry = p.cfg.RegistryAddr
		}
		if p.secure != nil {
			p.secure.clusterConfig(&dc, name)
		}
		c, err := devcluster.Start(p.life, dc)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		p.clusters[name] = c
	}
	return nil
}

// createTopics creates the page-view and audit topics on every cluster,
// and waits for their leaders: producing to a topic
// auto-created a moment ago can fail while its partitions open.
func (p *Pipeline) createTopics(ctx context.Context) error {
	for _, name := range p.cfg.clusters() {
		topics := map[string]int32{p.cfg.Topic: p.cfg.Partitions, audit.DefaultTopic: 1}
		cc, err := p.clientConfig(name, UserAdmin)
		if err != nil {
			return err
		}
		if err := ensureTopics(ctx, cc, topics); err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
	}
	return nil
}

func ensureTopics(ctx context.Context, cc network.ClientConfig, topics map[string]int32) error {
	cl, err := network.NewClient(cc)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for t, n := range topics {
		rf := int16(1)
		if t == audit.DefaultTopic {
			// The broker's choice: audit.topic.replication.factor capped at
			// the live brokers, so that a dead broker loses no audit partition.
			rf = -1
		}
		resp, err := adm.CreateTopic(ctx, n, rf, nil, t)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", t, err)
		}
	}
	for {
		md, err := adm.Metadata(ctx)
		ready := err == nil
		for t, n := range topics {
			if !ready {
				break
			}
			td, ok := md.Topics[t]
			if !ok || len(td.Partitions) < int(n) {
				ready = false
				break
			}
			for _, pd := range td.Partitions {
				if pd.Leader < 0 || pd.Err != nil {
					ready = false
				}
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topics %v have no leaders yet: %w", topics, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startProducer starts the page-view producer of dc. The client counts
// what dc acknowledged (the producer tier) and publishes the counts to dc's
// own audit topic, which the mirror carries into analytics with the data,
// as LinkedIn's pipeline did.
func (p *Pipeline) startProducer(ctx context.Context, dc string) error {
	id := pageview.NewProducerID(dc)
	cc, err := p.clientConfig(dc, producerUser(dc))
	if err != nil {
		return err
	}
	prod, err := NewProducer(ProducerConfig{
		Brokers: cc.Brokers, Security: cc.Security(), RegistryURL: p.RegistryURL(), Registry: p.registryClient(producerUser(dc)),
		Datacenter: dc, Producer: id,
		Topic: p.cfg.Topic, Rate: p.cfg.Rate, Logger: p.logger.With("producer", id),
		Audit: client.ProducerAudit{Cluster: dc, Instance: id, Window: p.cfg.AuditWindow, Interval: p.cfg.AuditInterval},
	})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(p.life)
	r := &producerRun{dc: dc, p: prod, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.stats, r.err = prod.Run(runCtx, stopTimeout)
		if r.err != nil {
			p.logger.Error("page-view producer stopped", "producer", id, "err", r.err)
		}
	}()
	p.mu.Lock()
	p.producers = append(p.producers, r)
	p.mu.Unlock()
	return nil
}

// StopProducers stops every producer, waits for their acknowledgements and
// their last audit counts, and returns what each produced.
func (p *Pipeline) StopProducers() []ProducerStats {
	p.mu.Lock()
	runs := p.producers
	p.producers = nil
	p.mu.Unlock()
	var out []ProducerStats
	for _, r := range runs {
		r.cancel()
		<-r.done
		out = append(out, r.stats)
	}
	p.mu.Lock()
	p.stopped = append(p.stopped, out...)
	p.mu.Unlock()
	return out
}

// ProducerStats returns the live counts of the running producers and the
// final ones of stopped producers.
func (p *Pipeline) ProducerStats() []ProducerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append([]ProducerStats(nil), p.stopped...)
	for _, r := range p.producers {
		out = append(out, r.p.Stats())
	}
	return out
}

// clientConfig is how user reaches cluster: its bootstrap servers on the
// listener for clients and, secured, the user's credentials.
func (p *Pipeline) clientConfig(cluster, user string) (network.ClientConfig, error) {
	cc := network.ClientConfig{Brokers: p.clusters[cluster].Bootstrap()}
	if p.secure == nil {
		return cc, nil
	}
	sec, err := p.secure.clientSecurity(user, clientsProtocol)
	return cc.Secured(sec), err
}

// registryClient is user's schema registry credentials and trust (none
// unsecured); the URL is the caller's.
func (p *Pipeline) registryClient(user string) serde.ClientConfig {
	if p.secure == nil {
		return serde.ClientConfig{}
	}
	return p.secure.registryClient(user)
}

// Cluster returns a cluster by name (dc1, dc2, analytics), nil if unknown.
func (p *Pipeline) Cluster(name string) *devcluster.Cluster { return p.clusters[name] }

// Clusters returns the cluster names, analytics last.
func (p *Pipeline) Clusters() []string { return p.cfg.clusters() }

// RegistryURL returns the schema registry's URL.
func (p *Pipeline) RegistryURL() string { return p.clusters[AnalyticsCluster].RegistryURL() }

// Output returns the loader's file system and base path.
func (p *Pipeline) Output() (filesys.FS, string) { return p.fsys, p.base }

// Config returns the configuration with defaults filled in.
func (p *Pipeline) Config() Config { return p.cfg }

// LoaderDuplicates returns how many mirrored duplicates the in-process
// loader recognised by their origin header and dropped; -1 with the
// scheduled loader, whose child processes report them in their runs'
// summaries (`tributary jobs history`).
func (p *Pipeline) LoaderDuplicates() int64 {
	if p.cfg.LoaderScheduled {
		return -1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loaderDup
}

// StartPart starts a part ("mirror", "loader" or "audit") that is not
// running.
func (p *Pipeline) StartPart(ctx context.Context, name string) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errors.New("pipeline: closed")
	}
	if p.parts[name] != nil {
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	var pt *part
	var err error
	switch name {
	case "mirror":
		pt, err = p.startMirror(ctx)
	case "loader":
		pt, err = p.startLoader(ctx)
	case "audit":
		pt, err = p.startAudit(ctx)
	case "compact":
		pt, err = p.startCompact(ctx)
	default:
		return fmt.Errorf("pipeline: no part %q", name)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if pt == nil {
		return nil
	}
	p.mu.Lock()
	p.parts[name] = pt
	p.mu.Unlock()
	return nil
}

// StopPart stops a running part gracefully; stopping a stopped part does
// nothing.
func (p *Pipeline) StopPart(name string) error {
	p.mu.Lock()
	pt := p.parts[name]
	delete(p.parts, name)
	p.mu.Unlock()
	if pt == nil {
		return nil
	}
	pt.cancel()
	select {
	case err := <-pt.done:
		return err
	case <-time.After(2 * stopTimeout):
		return fmt.Errorf("pipeline: %s did not stop within %v", name, 2*stopTimeout)
	}
}

// runPart runs fn on its own goroutine as a part. A part that ends before
// it is stopped is logged: the pipeline goes on without it, and the audit
// report will show what it missed.
func (p *Pipeline) runPart(name string, fn func(ctx context.Context) error) *part {
	ctx, cancel := context.WithCancel(p.life)
	pt := &part{name: name, cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := fn(ctx)
		if ctx.Err() == nil {
			p.logger.Error("pipeline part stopped on its own", "part", name, "err", err)
		}
		pt.done <- err
	}()
	return pt
}

// Close stops everything: producers first, then the mirror, the loader and
// the audit service, then the clusters. Close is idempotent.
func (p *Pipeline) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	var errs []error
	p.StopProducers()
	for _, name := range []string{"compact", "mirror", "loader", "audit"} {
		if err := p.StopPart(name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if p.tables != nil {
		_ = p.tables.Close()
	}
	if p.fsys != nil {
		if err := p.fsys.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	names := p.cfg.clusters()
	for i := len(names) - 1; i >= 0; i-- {
		if c := p.clusters[names[i]]; c != nil {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("cluster %s: %w", names[i], err))
			}
		}
	}
	p.lifeCancel()
	return errors.Join(errs...)
}
