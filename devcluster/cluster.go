package devcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tributary/tributary/broker"
	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/sasl"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/security"
	"github.com/tributary/tributary/schema/registry"
)

// Defaults.
const (
	// DefaultHost is the address brokers listen on and advertise.
	DefaultHost = "127.0.0.1"
	// DefaultZooKeeperSession is the session timeout of ZooKeeper sessions.
	DefaultZooKeeperSession = 10 * time.Second
	// shutdownTimeout bounds the registry's graceful shutdown.
	shutdownTimeout = 10 * time.Second
	// CoordinationDir, under Dir, holds the in-process coordination
	// service's tree (memcoord.Open).
	CoordinationDir = "coordination"
)

// Config describes a cluster. Zero values mean defaults, except Dir.
type Config struct {
	// Name labels log lines ("dc1"); empty means none.
	Name string
	// Dir holds the brokers' data, <Dir>/broker-<id>. Required.
	Dir string
	// Brokers is the number of brokers, ids 1..Brokers; default 1.
	Brokers int
	// Host is the address brokers listen on and advertise; default
	// DefaultHost.
	Host string
	// Port is the first broker's port, the others follow; 0 picks free
	// ports (a restarted broker keeps the port it got).
	Port int
	// Partitions is num.partitions for auto-created topics; default
	// config.DefaultNumPartitions.
	Partitions int32
	// Registry, when set, serves the schema registry on this host:port
	// (port 0 picks one) on the cluster's coordination service.
	Registry string
	// ZooKeeper is a zookeeper.connect string ("h:2181/chroot"); empty
	// means in-process coordination.
	ZooKeeper string
	// ZooKeeperSession is the ZooKeeper session timeout; default
	// DefaultZooKeeperSession.
	ZooKeeperSession time.Duration
	// Listeners are every broker's client listeners, first first; empty
	// means one PLAINTEXT listener. Listener i of broker id is on port
	// Port+i*Brokers+id-1 when Port is set (free ports otherwise).
	// Bootstrap returns the first one's addresses, BootstrapOn any's.
	Listeners []Listener
	// InterBrokerListener names the listener of Listeners the brokers
	// replicate over (inter.broker.listener.name); "" is the first. A TLS
	// one presents TLS's key pair as the brokers' client certificate.
	InterBrokerListener string
	// TLS is every TLS listener's key pair and truststore (one key pair
	// for all brokers: its certificate names Host).
	TLS security.TLS
	// ScramUsers (name to password) are written as SCRAM-SHA-256 and
	// SCRAM-SHA-512 credentials into the coordination service before the
	// brokers start, as `kafka-configs --alter --entity-type users` does.
	ScramUsers map[string]string
	// Authorizer turns on every broker's ACLs (authorizer.class.name,
	// super.users, allow.everyone.if.no.acl.found). The brokers' own
	// principal on InterBrokerListener must be among SuperUsers (or be
	// granted ClusterAction and the topics' Read/Describe through ACLs),
	// or replication stops.
	Authorizer config.Authorizer
	// ACLs are stored in the coordination service (Kafka's /kafka-acl
	// layout) before the brokers start, as `kafka-acls
	// --authorizer-properties` does; CreateACLs and DeleteACLs change them
	// while the cluster runs.
	ACLs []acl.Binding
	// PrincipalRules is every TLS listener's ssl.principal.mapping.rules;
	// "" is DEFAULT (User:<the certificate's subject DN>).
	PrincipalRules string
	// RegistrySecurity serves the registry over HTTPS and/or with basic
	// authentication (schema/registry's Need says what each request
	// needs); nil is plain, anonymous HTTP.
	RegistrySecurity *network.HTTPSecurity
	// Broker, when set, adjusts each broker's configuration (segment
	// sizes, retention...) after the fields above are filled in.
	Broker func(*config.Config)
	// Logger receives the brokers' and registry's logs; nil discards.
	Logger *slog.Logger
}

// Listener is one client listener of every broker of a cluster.
type Listener struct {
	// Name is the listener name (upper case, e.g. EXTERNAL); default the
	// protocol's name.
	Name string
	// Protocol is its security protocol; default PLAINTEXT.
	Protocol security.Protocol
	// ClientAuth is its ssl.client.auth (TLS listeners only).
	ClientAuth security.ClientAuth
}

func (l Listener) withDefaults() Listener {
	if l.Protocol == "" {
		l.Protocol = security.Plaintext
	}
	if l.Name == "" {
		l.Name = string(l.Protocol)
	}
	l.Name = strings.ToUpper(l.Name)
	return l
}

func (c Config) withDefaults() Config {
	if len(c.Listeners) == 0 {
		c.Listeners = []Listener{{}}
	}
	ls := make([]Listener, len(c.Listeners))
	for i, l := range c.Listeners {
		ls[i] = l.withDefaults()
	}
	c.Listeners = ls
	if c.InterBrokerListener == "" {
		c.InterBrokerListener = c.Listeners[0].Name
	}
	c.InterBrokerListener = strings.ToUpper(c.InterBrokerListener)
	if c.Brokers == 0 {
		c.Brokers = 1
	}
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.Partitions == 0 {
		c.Partitions = config.DefaultNumPartitions
	}
	if c.ZooKeeperSession == 0 {
		c.ZooKeeperSession = DefaultZooKeeperSession
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate checks the configuration and names the offending field.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case strings.TrimSpace(c.Dir) == "":
		return bad("Dir is required")
	case c.Brokers < 1 || c.Brokers > 64:
		return bad("Brokers %d: want 1 to 64", c.Brokers)
	case c.Port < 0 || c.Port+len(c.Listeners)*c.Brokers-1 > 65535:
		return bad("Port %d: the ports up to %d must be valid", c.Port, c.Port+len(c.Listeners)*c.Brokers-1)
	case c.Partitions < 1:
		return bad("Partitions %d: must be >= 1", c.Partitions)
	case strings.ContainsAny(c.Host, "/ "):
		return bad("Host %q: not a host name", c.Host)
	case c.ZooKeeperSession < 0:
		return bad("ZooKeeperSession %v: must be >= 0", c.ZooKeeperSession)
	}
	names := map[string]bool{}
	tlsUsed := false
	for _, l := range c.Listeners {
		if _, err := security.ParseProtocol(string(l.Protocol)); err != nil {
			return bad("Listeners %s: %v", l.Name, err)
		}
		if names[l.Name] || strings.ContainsAny(l.Name, ":/, ") {
			return bad("Listeners %s: want distinct names without ':', '/', ',' or spaces", l.Name)
		}
		names[l.Name] = true
		tlsUsed = tlsUsed || l.Protocol.TLS()
	}
	if !names[c.InterBrokerListener] {
		return bad("InterBrokerListener %q: not one of Listeners", c.InterBrokerListener)
	}
	if tlsUsed && !c.TLS.HasKeyPair() {
		return bad("TLS: a TLS listener needs a key pair")
	}
	if c.Registry != "" {
		if _, _, err := net.SplitHostPort(c.Registry); err != nil {
			return bad("Registry %q: %v", c.Registry, err)
		}
	}
	if c.ZooKeeper != "" {
		if _, _, err := zkcoord.ParseConnect(c.ZooKeeper); err != nil {
			return bad("ZooKeeper %q: %v", c.ZooKeeper, err)
		}
	}
	return nil
}

// Cluster is a running cluster.
type Cluster struct {
	cfg     Config
	dir     string
	srv     *memcoord.Server // nil on ZooKeeper
	connect coord.SessionFactory
	logger  *slog.Logger

	mu      sync.Mutex
	closed  bool
	brokers []*broker.Broker // index id-1; nil while stopped
	addrs   [][]string       // [listener][id-1]: the address each broker got
	regURL  string
	stopReg func()
}

// Start starts the brokers (and the registry) and returns once every broker
// serves and the topics found on disk are restored. The brokers serve until
// ctx is cancelled or Close is called; callers that stop other parts first
// (a pipeline) pass a ctx that outlives them and call Close.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("%w: Dir: %v", ErrInvalidConfig, err)
	}
	logger := cfg.Logger
	if cfg.Name != "" {
		logger = logger.With("cluster", cfg.Name)
	}
	c := &Cluster{
		cfg:     cfg,
		dir:     dir,
		logger:  logger,
		brokers: make([]*broker.Broker, cfg.Brokers),
		addrs:   make([][]string, len(cfg.Listeners)),
	}
	for i := range c.addrs {
		c.addrs[i] = make([]string, cfg.Brokers)
	}
	if cfg.ZooKeeper == "" {
		// Durable in Dir, as ZooKeeper's tree is in its dataDir: a
		// restart finds the topics' assignments, leaders, ISRs and configs
		// (and ACLs, credentials, schemas, offsets) where they were.
		srv, err := memcoord.Open(filepath.Join(dir, CoordinationDir))
		if err != nil {
			return nil, fmt.Errorf("devcluster: %w", err)
		}
		c.srv = srv
		c.connect = func(context.Context) (coord.Session, error) { return c.srv.Connect(memcoord.Config{}), nil }
	} else {
		zc := zkcoord.Config{SessionTimeout: cfg.ZooKeeperSession, Logger: logger}
		connect := cfg.ZooKeeper
		c.connect = func(ctx context.Context) (coord.Session, error) { return zkcoord.Connect(ctx, connect, zc) }
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
		}
	}()
	if err := c.writeScramUsers(ctx); err != nil {
		return nil, err
	}
	if len(cfg.ACLs) > 0 {
		if err := c.CreateACLs(ctx, cfg.ACLs...); err != nil {
			return nil, fmt.Errorf("ACLs: %w", err)
		}
	}
	for i := range cfg.Brokers {
		b, err := c.newBroker(int32(i + 1))
		if err != nil {
			return nil, err
		}
		c.brokers[i] = b
	}
	if c.srv != nil {
		// A data directory written before the coordination state was kept
		// in it has none: before any broker serves, the coordinator learns
		// which producer ids were handed out before, and then which topics
		// lie on which broker. (With the state kept, both find nothing to
		// add.)
		if err := broker.SeedProducerIDs(ctx, c.brokers...); err != nil {
			return nil, err
		}
	}
	for i, b := range c.brokers {
		if err := b.Start(ctx); err != nil {
			return nil, fmt.Errorf("broker %d: %w", i+1, err)
		}
		c.recordAddrs(int32(i+1), b)
	}
	if c.srv != nil {
		if err := broker.RestoreTopics(ctx, c.brokers...); err != nil {
			return nil, err
		}
	}
	c.restoreLeaders(ctx)
	if cfg.Registry != "" {
		if err := c.startRegistry(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// newBroker builds broker id; each listener is on the port it had before,
// if any.
func (c *Cluster) newBroker(id int32) (*broker.Broker, error) {
	var listeners, protocols []string
	for i, l := range c.cfg.Listeners {
		port := 0
		if c.cfg.Port > 0 {
			port = c.cfg.Port + i*c.cfg.Brokers + int(id) - 1
		}
		if prev := c.addrs[i][id-1]; prev != "" {
			if _, p, err := net.SplitHostPort(prev); err == nil {
				port, _ = strconv.Atoi(p)
			}
		}
		listeners = append(listeners, l.Name+"://"+net.JoinHostPort(c.cfg.Host, strconv.Itoa(port)))
		protocols = append(protocols, l.Name+":"+string(l.Protocol))
	}
	bc := config.Config{
		BrokerID:                    id,
		Listeners:                   strings.Join(listeners, ","),
		ListenerSecurityProtocolMap: strings.Join(protocols, ","),
		InterBrokerListenerName:     c.cfg.InterBrokerListener,
		LogDirs:                     []string{filepath.Join(c.dir, fmt.Sprintf("broker-%d", id))},
		NumPartitions:               c.cfg.Partitions,
	}
	if c.cfg.TLS.HasKeyPair() {
		bc.TLS = security.ServerTLS{TLS: c.cfg.TLS, PrincipalRules: c.cfg.PrincipalRules}
		bc.ListenerTLS = map[string]security.ServerTLS{}
		for _, l := range c.cfg.Listeners {
			if l.Protocol.TLS() {
				bc.ListenerTLS[l.Name] = security.ServerTLS{TLS: c.cfg.TLS, ClientAuth: l.ClientAuth, PrincipalRules: c.cfg.PrincipalRules}
			}
		}
	}
	bc.Authorizer = c.cfg.Authorizer
	if c.cfg.Broker != nil {
		c.cfg.Broker(&bc)
	}
	// nil: each broker gets a private metrics registry, since several
	// brokers of one process would collide on one.
	b, err := broker.New(bc, c.logger.With("broker", id), nil, broker.WithCoordinator(c.connect))
	if err != nil {
		return nil, fmt.Errorf("broker %d: %w", id, err)
	}
	return b, nil
}

// recordAddrs remembers where broker id's listeners are bound.
func (c *Cluster) recordAddrs(id int32, b *broker.Broker) {
	for i, l := range c.cfg.Listeners {
		c.addrs[i][id-1] = b.ListenerAddr(l.Name)
	}
}

// writeScramUsers stores Config.ScramUsers' credentials in the
// coordination service, where every broker's credential store reads them.
func (c *Cluster) writeScramUsers(ctx context.Context) error {
	return WriteScramUsers(ctx, c.connect, c.cfg.ScramUsers, c.logger.With("component", "devcluster-users"))
}

// WriteScramUsers stores users' (name to password) SCRAM-SHA-256 and
// SCRAM-SHA-512 credentials in the coordination service connect reaches,
// as `kafka-configs --zookeeper --alter --add-config SCRAM-SHA-512=...`
// does: brokers of that cluster, running or started later, log them in.
func WriteScramUsers(ctx context.Context, connect coord.SessionFactory, users map[string]string, logger *slog.Logger) error {
	if len(users) == 0 {
		return nil
	}
	store := sasl.NewCredentialStore(ctx, connect, logger)
	defer store.Close()
	for _, user := range slices.Sorted(maps.Keys(users)) {
		password := users[user]
		err := store.UpdateUser(ctx, user, func(cfg map[string]string) error {
			for _, m := range sasl.ScramMechanisms {
				cred, err := sasl.NewScramCredential(m, password, sasl.MinIterations)
				if err != nil {
					return err
				}
				cfg[m.Name] = cred.String()
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("ScramUsers %s: %w", user, err)
		}
	}
	return nil
}

// CreateACLs stores bindings in the coordination service, where every
// broker's authorizer follows them (at once on the brokers' caches, as
// Kafka's change notifications make them).
func (c *Cluster) CreateACLs(ctx context.Context, bindings ...acl.Binding) error {
	return c.withACLStore(ctx, func(s *acl.Store) error { return createACLs(ctx, s, bindings) })
}

func createACLs(ctx context.Context, s *acl.Store, bindings []acl.Binding) error {
	var errs []error
	for i, err := range s.Create(ctx, bindings) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%v: %w", bindings[i], err))
		}
	}
	return errors.Join(errs...)
}

// DeleteACLs removes the bindings filters select and returns them.
func (c *Cluster) DeleteACLs(ctx context.Context, filters ...acl.Filter) ([]acl.Binding, error) {
	var deleted []acl.Binding
	err := c.withACLStore(ctx, func(s *acl.Store) error {
		var errs []error
		for _, r := range s.Delete(ctx, filters) {
			deleted = append(deleted, r.Deleted...)
			if r.Err != nil {
				errs = append(errs, r.Err)
			}
		}
		return errors.Join(errs...)
	})
	return deleted, err
}

// withACLStore runs op on a store of the cluster's ACLs, synced first.
func (c *Cluster) withACLStore(ctx context.Context, op func(*acl.Store) error) error {
	return withACLStore(ctx, c.connect, c.logger.With("component", "devcluster-acls"), op)
}

// StoreACLs stores bindings in the coordination service connect reaches
// (Kafka's ACL nodes, as `kafka-acls --authorizer-properties` writes
// them), where the brokers' authorizers of that cluster follow them.
func StoreACLs(ctx context.Context, connect coord.SessionFactory, bindings []acl.Binding, logger *slog.Logger) error {
	return withACLStore(ctx, connect, logger, func(s *acl.Store) error { return createACLs(ctx, s, bindings) })
}

func withACLStore(ctx context.Context, connect coord.SessionFactory, logger *slog.Logger, op func(*acl.Store) error) error {
	s := acl.NewStore(ctx, connect, acl.New(acl.Config{}), logger)
	defer s.Close()
	select {
	case <-s.Synced():
	case <-ctx.Done():
		return fmt.Errorf("devcluster: loading the ACLs: %w", ctx.Err())
	}
	return op(s)
}

// startRegistry serves the schema registry on the cluster's coordination.
func (c *Cluster) startRegistry(ctx context.Context) error {
	sess, err := c.connect(ctx)
	if err != nil {
		return fmt.Errorf("schema registry: %w", err)
	}
	store, err := registry.NewCoordStore(ctx, sess, registry.CoordConfig{Logger: c.logger})
	if err != nil {
		_ = sess.Close()
		return fmt.Errorf("schema registry store: %w", err)
	}
	reg, err := registry.New(store, registry.Config{Logger: c.logger})
	if err != nil {
		_ = store.Close()
		_ = sess.Close()
		return err
	}
	hs, err := network.StartSecureHTTP(ctx, c.cfg.Registry, reg.Handler(), c.cfg.RegistrySecurity, registry.Need)
	if err != nil {
		_ = store.Close()
		_ = sess.Close()
		return fmt.Errorf("schema registry: %w", err)
	}
	go func() {
		<-hs.Done()
		if err := hs.Err(); err != nil {
			c.logger.Error("schema registry stopped", "err", err)
		}
	}()
	c.regURL = c.cfg.RegistrySecurity.Scheme() + "://" + hs.Addr()
	c.stopReg = func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			c.logger.Warn("schema registry shutdown", "err", err)
		}
		_ = store.Close()
		_ = sess.Close()
	}
	return nil
}

// Name returns Config.Name.
func (c *Cluster) Name() string { return c.cfg.Name }

// Dir returns the absolute data directory.
func (c *Cluster) Dir() string { return c.dir }

// Bootstrap returns every broker's address on the first listener, broker
// 1 first.
func (c *Cluster) Bootstrap() []string { return c.BootstrapOn(c.cfg.Listeners[0].Name) }

// BootstrapOn returns every broker's address on the named listener, nil if
// there is no such listener.
func (c *Cluster) BootstrapOn(listener string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, l := range c.cfg.Listeners {
		if strings.EqualFold(l.Name, listener) {
			return append([]string(nil), c.addrs[i]...)
		}
	}
	return nil
}

// Listeners returns the client listeners, defaults filled in.
func (c *Cluster) Listeners() []Listener { return append([]Listener(nil), c.cfg.Listeners...) }

// RegistryURL returns the schema registry's base URL, "" without one.
func (c *Cluster) RegistryURL() string { return c.regURL }

// ZooKeeper returns Config.ZooKeeper ("" on in-process coordination).
func (c *Cluster) ZooKeeper() string { return c.cfg.ZooKeeper }

// Connector opens a session on the cluster's coordination service:
// consumer groups of the
// cluster (the mirror's, the loader's) coordinate through it.
func (c *Cluster) Connector() coord.SessionFactory { return c.connect }

// Memcoord returns the in-process coordination server, nil on ZooKeeper.
func (c *Cluster) Memcoord() *memcoord.Server { return c.srv }

// StopBroker closes broker id (1-based) gracefully; its partitions are
// unavailable until StartBroker. Stopping a stopped broker does nothing.
func (c *Cluster) StopBroker(id int) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if id < 1 || id > len(c.brokers) {
		c.mu.Unlock()
		return fmt.Errorf("%w: %d", ErrNoBroker, id)
	}
	b := c.brokers[id-1]
	c.brokers[id-1] = nil
	c.mu.Unlock()
	if b == nil {
		return nil
	}
	return b.Close()
}

// StartBroker starts a stopped broker id again, on its directory and port;
// it serves until ctx is cancelled or Close. Starting a running broker does
// nothing.
func (c *Cluster) StartBroker(ctx context.Context, id int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if id < 1 || id > len(c.brokers) {
		return fmt.Errorf("%w: %d", ErrNoBroker, id)
	}
	if c.brokers[id-1] != nil {
		return nil
	}
	b, err := c.newBroker(int32(id))
	if err != nil {
		return err
	}
	if err := b.Start(ctx); err != nil {
		_ = b.Close()
		return fmt.Errorf("broker %d: %w", id, err)
	}
	c.brokers[id-1] = b
	c.recordAddrs(int32(id), b)
	return nil
}

// Close stops the registry and every broker, last started first; every
// broker is closed whatever fails.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	brokers := c.brokers
	stopReg := c.stopReg
	c.mu.Unlock()
	if stopReg != nil {
		stopReg()
	}
	var errs []error
	for i := len(brokers) - 1; i >= 0; i-- {
		if brokers[i] == nil {
			continue
		}
		if err := brokers[i].Close(); err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", i+1, err))
		}
	}
	if c.srv != nil {
		if err := c.srv.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
