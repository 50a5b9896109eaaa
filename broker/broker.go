package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/group"
	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/broker/txn"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/security"
)

// Broker is one Kafka-protocol server over a set of log directories.
type Broker struct {
	cfg     config.Config
	logger  *slog.Logger
	metrics *metrics
	gather  prometheus.Gatherer
	openLog partition.Opener
	// decompressor reads compressed batches for exact timestamp lookups;
	// safe for concurrent use.
	decompressor kgo.Decompressor

	// connect opens coordination sessions; standalone marks the private
	// in-process coordinator of the single-node mode, whose tree ownCoord
	// keeps in the first log dir (closed by Close).
	connect    coord.SessionFactory
	standalone bool
	ownCoord   *memcoord.Server

	mu     sync.RWMutex
	closed bool
	member *cluster.Member
	// onDisk lists every partition directory, open or not.
	onDisk map[string]map[int32]string
	// applied is the snapshot the partitions were last reconciled to;
	// served is closed and replaced after every pass.
	applied cluster.Snapshot
	served  chan struct{}

	// seen holds the topics of the last reconciled snapshot; reconciler-owned.
	seen map[string]bool
	// badConfigs holds, per topic, the config error last warned about;
	// reconciler-owned.
	badConfigs map[string]string
	// dyn is the effective dynamic broker configuration (dynconfig.go),
	// replaced by the reconciler; badDynamic, reconciler-owned, holds the
	// error last warned about per entity.
	dyn        atomic.Pointer[dynamicConfig]
	badDynamic map[string]string
	// throttle bounds replication bandwidth of throttled replicas
	// (throttle.go).
	throttle *replicationThrottle
	// cleaner is the running log cleaner (nil when disabled), reconfigured
	// by the dynamic broker configs (cleaner.go).
	cleaner atomic.Pointer[logCleaner]
	// logDirMoves are the replicas moving between log.dirs
	// (alterreplicalogdirs.go).
	logDirMoves *logDirMoves

	pids *producerIDs
	// replication holds the replicas and replicates them (broker/partition).
	replication *partition.Manager
	// partitions is replication as the request handlers see it: the
	// served replicas, acks=all, followers' fetches.
	partitions partition.Partitions
	// res bounds descriptors, connections and topic creation (limits.go).
	res *resources

	// groups is the group coordinator; groupRegistry, when set, mirrors
	// its offsets into the coordination service (see groups.go).
	groups        *group.Coordinator
	groupRegistry *group.ZooKeeperRegistry
	// txns is the transaction coordinator; markerSender sends its markers
	// (see txns.go).
	txns         *txn.Coordinator
	markerSender *txnMarkerWriter
	// txnGuards hold the KIP-890 verifications until their appends
	// (txnverify.go).
	txnGuards txnVerifyGuards
	// scram is the SCRAM credential store, made on first use (scram.go).
	scram scramStore
	// quotas are the client quotas and their meters (clientquota.go).
	quotas *clientQuotas
	// authz is the authorizer (authorize.go); nil allows everything.
	authz *authorization

	startMu sync.Mutex
	started bool
	// listeners are bound by Start and fixed after (listeners.go);
	// interBroker names the one other brokers are reached on.
	listeners   []*listener
	interBroker string
	metricsSrv  *network.HTTPServer
	// onPrincipal, a test hook, sees every connection's principal once
	// known.
	onPrincipal func(listener, principal string)

	// txnMarkers is the TxnMarkerListener (txnlog.go); nil: none.
	txnMarkers atomic.Pointer[txnMarkerListenerBox]

	// shutdownCtx is cancelled when Close begins, so long-polls return.
	shutdownCtx    context.Context
	shutdownCancel context.CancelFunc

	connMu sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
	done      chan struct{}
}

// Option adjusts a Broker beyond its Config; for tests and embedding.
type Option func(*Broker)

// withLogOpener replaces the storage engine, so that tests can run the
// broker over an in-memory log.
func withLogOpener(open partition.Opener) Option { return func(b *Broker) { b.openLog = open } }

// New validates cfg, finds the partitions under the log directories and
// returns a broker that is not yet listening nor part of a cluster (see
// Start and Serve, which join the cluster and open the partitions this
// broker leads).
// logger may be nil (logs are discarded); reg may be nil (a private registry
// is used). When cfg.MetricsListen is set, reg must also be a
// prometheus.Gatherer (a *prometheus.Registry is).
func New(cfg config.Config, logger *slog.Logger, reg prometheus.Registerer, opts ...Option) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var gather prometheus.Gatherer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg, gather = r, r
	} else if g, ok := reg.(prometheus.Gatherer); ok {
		gather = g
	}
	if cfg.MetricsListen != "" && gather == nil {
		return nil, fmt.Errorf("%w: metrics.listen needs a registry that is also a prometheus.Gatherer", config.ErrInvalidConfig)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("broker: registering metrics: %w", err)
	}
	b := &Broker{
		cfg:     cfg,
		logger:  logger,
		metrics: m,
		gather:  gather,
		onDisk:  map[string]map[int32]string{},
		served:  make(chan struct{}),
		applied: cluster.Snapshot{Controller: -1},
		conns:   map[net.Conn]struct{}{},
		done:    make(chan struct{}),

		decompressor: kgo.DefaultDecompressor(),
	}
	if b.res, err = newResources(cfg, logger, reg); err != nil {
		return nil, fmt.Errorf("broker: registering metrics: %w", err)
	}
	if b.authz, err = newAuthorization(cfg.Authorizer, reg); err != nil {
		return nil, err
	}
	if b.quotas, err = newClientQuotas(cfg.Limits, reg); err != nil {
		return nil, fmt.Errorf("broker: registering metrics: %w", err)
	}
	b.openLog = partition.OpenStorage(logger, b.res.files)
	for _, o := range opts {
		o(b)
	}
	if err := b.chooseCoordinator(); err != nil {
		return nil, err
	}
	// From here a failure releases the in-process coordination's directory
	// (its lock), so that the caller may try again.
	fail := func(err error) (*Broker, error) {
		if b.ownCoord != nil {
			_ = b.ownCoord.Close()
		}
		return nil, err
	}
	if err := b.newGroupCoordinator(reg); err != nil {
		return fail(err)
	}
	if err := b.newTxnCoordinator(); err != nil {
		return fail(err)
	}
	b.shutdownCtx, b.shutdownCancel = context.WithCancel(context.Background())
	for _, d := range cfg.LogDirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fail(fmt.Errorf("broker: log.dirs: %w", err))
		}
	}
	if b.pids, err = openProducerIDs(filepath.Join(cfg.LogDirs[0], producerIDFile)); err != nil {
		return fail(err)
	}
	if err := recoverLogDirMoves(cfg.LogDirs); err != nil {
		return fail(err)
	}
	if b.onDisk, err = scanLogDirs(cfg.LogDirs); err != nil {
		return fail(err)
	}
	b.throttle = newReplicationThrottle(time.Now)
	b.logDirMoves = newLogDirMoves()
	b.replication = partition.NewManager(b.replicationDeps())
	b.partitions = b.replication
	return b, nil
}

// scanLogDirs finds the <topic>-<partition> directories of every log dir.
func scanLogDirs(logDirs []string) (map[string]map[int32]string, error) {
	found := map[string]map[int32]string{}
	for _, d := range logDirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			return nil, fmt.Errorf("broker: reading log dir: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			name, p, ok := parsePartitionDir(e.Name())
			if !ok {
				continue
			}
			if found[name] == nil {
				found[name] = map[int32]string{}
			}
			if prev, dup := found[name][p]; dup {
				return nil, fmt.Errorf("broker: partition %s-%d is in two log dirs: %s and %s", name, p, prev, d)
			}
			found[name][p] = filepath.Join(d, e.Name())
		}
	}
	return found, nil
}

func partitionDirName(topic string, p int32) string {
	return topic + "-" + strconv.Itoa(int(p))
}

func parsePartitionDir(name string) (string, int32, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.Itoa(int(p)) != name[i+1:] {
		return "", 0, false
	}
	if validateTopicName(name[:i]) != nil {
		return "", 0, false
	}
	return name[:i], int32(p), true
}

// pickLogDir returns the log dir holding the fewest partitions, as Kafka
// places new partitions.
func (b *Broker) pickLogDir() string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	count := map[string]int{}
	for _, parts := range b.onDisk {
		for _, dir := range parts {
			count[filepath.Dir(dir)]++
		}
	}
	best := b.cfg.LogDirs[0]
	for _, d := range b.cfg.LogDirs[1:] {
		if count[filepath.Clean(d)] < count[filepath.Clean(best)] {
			best = d
		}
	}
	return best
}

// validateTopicName applies Kafka's rules for topic names.
func validateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q", ErrInvalidTopic, name)
	case len(name) > 249:
		return fmt.Errorf("%w: longer than 249 characters", ErrInvalidTopic)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q contains %q", ErrInvalidTopic, name, c)
		}
	}
	return nil
}

// Topics returns the topic names and partition counts, as of the last
// reconciliation with the cluster metadata.
func (b *Broker) Topics() map[string]int32 { return b.partitions.Topics() }

// Start binds the listener (and the metrics listener) and serves in the
// background until ctx is cancelled or Close is called; both shut down
// gracefully.
func (b *Broker) Start(ctx context.Context) error {
	b.startMu.Lock()
	defer b.startMu.Unlock()
	if b.started {
		return ErrStarted
	}
	b.mu.RLock()
	closed := b.closed
	b.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if err := b.listen(ctx); err != nil {
		return err
	}
	// Clients are accepted only once the broker serves what it leads;
	// until then they wait in the listen backlog.
	if err := b.join(ctx); err != nil {
		b.closeListeners()
		return err
	}
	if err := b.startAuthorizer(ctx); err != nil {
		b.closeListeners()
		return err
	}
	if err := b.startClientQuotas(ctx); err != nil {
		b.closeListeners()
		return err
	}
	if b.cfg.MetricsListen != "" {
		// Profiles on the same operator-only listener (on a loopback
		// address unless metrics.pprof.enable says): profile before tuning.
		msrv, err := network.ServeMetricsWith(ctx, b.cfg.MetricsListen, b.gather, b.cfg.Metrics)
		if err != nil {
			b.closeListeners()
			return fmt.Errorf("broker: metrics.listen %s: %w", b.cfg.MetricsListen, err)
		}
		b.metricsSrv = msrv
		go func() {
			<-msrv.Done()
			if err := msrv.Err(); err != nil {
				b.logger.Error("metrics server stopped", "err", err)
			}
		}()
	}
	b.started = true
	b.startResources()
	for _, l := range b.listeners {
		b.wg.Add(1)
		go b.acceptLoop(l)
		if l.tls != nil {
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				l.tls.Run(b.shutdownCtx, l.name, b.cfg.TLSReloadInterval)
			}()
		}
	}
	b.wg.Add(5)
	go b.housekeeping()
	go b.runReconciler()
	go b.runGroupLoader()
	go b.replication.RunISRShrinker()
	go b.replication.RunHWCheckpointer()
	b.startCleaner()
	go func() {
		select {
		case <-ctx.Done():
			_ = b.Close()
		case <-b.done:
		}
	}()
	for _, l := range b.listeners {
		b.logger.Info("broker listening", "addr", l.ln.Addr().String(), "listener", l.name, "protocol", l.protocol,
			"advertised", l.advertised.HostPort(), "broker.id", b.cfg.BrokerID)
	}
	return nil
}

// listen binds every listener, TLS ones with their certificates loaded.
func (b *Broker) listen(ctx context.Context) error {
	plan, err := b.cfg.ListenerPlan()
	if err != nil {
		return err
	}
	b.listeners = nil // a Start that failed after binding closed them
	for _, spec := range plan.Bound {
		l := &listener{name: spec.Name, protocol: spec.Protocol}
		if spec.Protocol.TLS() {
			if l.tls, err = security.NewServer(b.cfg.TLSFor(spec.Name), b.logger); err == nil {
				l.ln, err = network.ListenKafkaTLS(ctx, spec.HostPort(), l.tls.Config())
			}
		} else {
			l.ln, err = network.ListenKafka(ctx, spec.HostPort())
		}
		if err == nil && spec.Protocol.SASL() {
			l.sasl, err = b.newAuthenticator(spec.Name)
		}
		if err != nil {
			if l.ln != nil {
				_ = l.ln.Close()
			}
			b.closeListeners()
			return fmt.Errorf("broker: listener %s on %s: %w", spec.Name, spec.HostPort(), err)
		}
		l.advertised = advertise(spec, plan, l.ln.Addr().(*net.TCPAddr))
		b.listeners = append(b.listeners, l)
	}
	b.interBroker = plan.InterBroker
	return nil
}

func (b *Broker) closeListeners() {
	for _, l := range b.listeners {
		_ = l.ln.Close()
	}
}

// listenerNamed returns this broker's listener of that name, or nil.
func (b *Broker) listenerNamed(name string) *listener {
	for _, l := range b.listeners {
		if l.name == name {
			return l
		}
	}
	return nil
}

// Serve starts the broker and blocks until ctx is cancelled or Close is
// called, then returns the result of the graceful shutdown.
func (b *Broker) Serve(ctx context.Context) error {
	if err := b.Start(ctx); err != nil {
		return err
	}
	<-b.done
	return b.closeErr
}

// Addr returns the address of the broker's first listener, "" before
// Start.
func (b *Broker) Addr() string {
	b.startMu.Lock()
	defer b.startMu.Unlock()
	if !b.started || len(b.listeners) == 0 {
		return ""
	}
	return b.listeners[0].ln.Addr().String()
}

// ListenerAddr returns the address the named listener (upper case, as in
// listeners) is bound to, "" before Start or if there is none.
func (b *Broker) ListenerAddr(name string) string {
	b.startMu.Lock()
	defer b.startMu.Unlock()
	if l := b.listenerNamed(name); l != nil && b.started {
		return l.ln.Addr().String()
	}
	return ""
}

// MetricsAddr returns the address /metrics is served on, "" if none.
func (b *Broker) MetricsAddr() string {
	b.startMu.Lock()
	defer b.startMu.Unlock()
	if b.metricsSrv == nil {
		return ""
	}
	return b.metricsSrv.Addr()
}

// Close shuts the broker down gracefully: it stops accepting, lets every
// connection finish the requests it has read, then flushes and closes every
// partition log. It is safe to call more than once.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.controlledShutdown()
		b.startMu.Lock()
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		started, msrv := b.started, b.metricsSrv
		b.startMu.Unlock()
		b.shutdownCancel()
		b.replication.StopFetchers()
		if started {
			b.closeListeners()
		}
		b.connMu.Lock()
		for c := range b.conns {
			// Unblocks the frame readers; handlers finish what was read.
			_ = c.SetReadDeadline(time.Now())
		}
		b.connMu.Unlock()
		b.wg.Wait()
		b.replication.CheckpointHighWatermarks()
		b.mu.RLock()
		m := b.member
		b.mu.RUnlock()
		if m != nil {
			// Leaving deregisters at once, so the cluster marks this
			// broker's partitions unavailable without waiting for a
			// session expiry.
			if err := m.Close(); err != nil {
				b.logger.Warn("leaving the cluster", "err", err)
			}
		}
		b.pids.close()
		if b.ownCoord != nil {
			if err := b.ownCoord.Close(); err != nil {
				b.logger.Warn("closing the in-process coordination", "err", err)
			}
		}
		if msrv != nil {
			_ = msrv.Close()
		}
		b.closeErr = b.closeLogs()
		b.res.files.Close()
		b.logger.Info("broker stopped", "err", b.closeErr)
		close(b.done)
	})
	<-b.done
	return b.closeErr
}

func (b *Broker) closeLogs() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	topics := b.replication.RemoveAll()
	var errs []error
	for name, slots := range topics {
		for _, p := range slots {
			if p == nil {
				continue
			}
			if err := p.Log().Flush(); err != nil {
				errs = append(errs, fmt.Errorf("flush %s-%d: %w", name, p.Partition(), err))
			}
			if err := p.Log().Close(); err != nil {
				errs = append(errs, fmt.Errorf("close %s-%d: %w", name, p.Partition(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// housekeeping applies retention every log.retention.check.interval.ms.
func (b *Broker) housekeeping() {
	defer b.wg.Done()
	tick := time.NewTicker(b.cfg.RetentionCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-b.shutdownCtx.Done():
			return
		case <-tick.C:
		}
		for _, p := range b.partitions.All() {
			n, err := p.Log().ApplyRetention()
			if err != nil {
				b.logger.Error("retention failed", "topic", p.Topic(), "partition", p.Partition(), "err", err)
				continue
			}
			if n > 0 {
				b.logger.Info("retention deleted segments", "topic", p.Topic(), "partition", p.Partition(), "segments", n)
				b.metrics.observeOffsets(p)
			}
		}
	}
}
