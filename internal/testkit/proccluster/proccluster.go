package proccluster

import (
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// DefaultSessionTimeout is the brokers' zookeeper.session.timeout.ms unless
// the test sets another: short, so that a killed broker's registration
// goes soon.
const DefaultSessionTimeout = 4 * time.Second

// StopTimeout bounds Stop's wait for a clean exit: the broker's
// controlled-shutdown timeout (30 s) plus its close, with room for a
// loaded machine.
const StopTimeout = 90 * time.Second

// Cluster is a set of `tributary broker` processes with ids 1..n on one
// ZooKeeper chroot, each with its data directory and properties file
// under one temporary directory.
type Cluster struct {
	connect string
	dir     string
	n       int // the highest id started
	props   map[string]string
	extra   []string // listener names after PLAINTEXT
	args    []string
	session time.Duration

	mu     sync.Mutex
	procs  map[int32]*testproc.Broker  // the running (or paused) processes
	ports  map[int32]map[string]string // listener name -> port, of each broker started once
	paused map[int32]bool
}

// New starts the brokers (Brokers, default 3) and returns once each
// listens. It fails t if one does not.
func New(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	o := options{brokers: 3, props: map[string]string{}, overrides: map[string]string{}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.connect == "" {
		o.connect = zktest.Chroot(t, testenv.ZooKeeper(t), "proccluster")
	}
	c := &Cluster{
		connect: o.connect,
		dir:     t.TempDir(),
		props:   o.props,
		extra:   o.listeners,
		args:    o.args(),
		session: DefaultSessionTimeout,
		procs:   map[int32]*testproc.Broker{},
		ports:   map[int32]map[string]string{},
		paused:  map[int32]bool{},
	}
	for _, m := range []map[string]string{o.props, o.overrides} {
		if v, ok := m["zookeeper.session.timeout.ms"]; ok {
			d, err := properties.ParseDuration(v, time.Millisecond, 1)
			if err != nil {
				t.Fatalf("zookeeper.session.timeout.ms=%q: %v", v, err)
			}
			c.session = d
		}
	}
	t.Cleanup(func() { c.close(t) })
	for id := int32(1); id <= int32(o.brokers); id++ {
		c.Start(t, id)
	}
	return c
}

// close SIGKILLs any process still running (testproc's cleanup, which
// also logs a failed test's broker output, has normally done so) and, if
// t failed, logs which brokers were down or paused at the end.
func (c *Cluster) close(t testing.TB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var state []string
	for id := int32(1); id <= int32(c.n); id++ {
		p := c.procs[id]
		switch {
		case p == nil:
			state = append(state, fmt.Sprintf("broker %d down", id))
		case c.paused[id]:
			state = append(state, fmt.Sprintf("broker %d paused", id))
		}
		if p != nil && p.Running() {
			_ = p.Signal(syscall.SIGKILL)
		}
	}
	if t.Failed() && len(state) > 0 {
		t.Logf("cluster on %s at the end: %s", c.connect, strings.Join(state, ", "))
	}
}

// names is every listener's name, PLAINTEXT first.
func (c *Cluster) names() []string { return append([]string{"PLAINTEXT"}, c.extra...) }

// properties is broker id's properties: the base ones, then the test's;
// each listener on its port in ports, or a free one.
func (c *Cluster) properties(id int32, ports map[string]string) map[string]string {
	var listeners []string
	for _, name := range c.names() {
		port := ports[name]
		if port == "" {
			port = "0"
		}
		listeners = append(listeners, name+"://127.0.0.1:"+port)
	}
	props := map[string]string{
		"broker.id":                       strconv.Itoa(int(id)),
		"log.dirs":                        c.LogDir(id),
		"zookeeper.connect":               c.connect,
		"zookeeper.session.timeout.ms":    strconv.FormatInt(DefaultSessionTimeout.Milliseconds(), 10),
		"zookeeper.connection.timeout.ms": "20000",
	}
	maps.Copy(props, c.props)
	props["listeners"] = strings.Join(listeners, ",")
	return props
}

// Start starts broker id, which is not running: the first time on free
// ports, after Stop or Kill on its data directory and its ports, so that
// clients seeded with the old address find it again and its own stale
// registration (same endpoints) is waited out rather than refused. It
// returns once the broker listens (testproc.StartBroker) and fails t
// otherwise.
func (c *Cluster) Start(t testing.TB, id int32) {
	t.Helper()
	c.mu.Lock()
	ports, running := c.ports[id], c.procs[id] != nil && c.procs[id].Running()
	c.mu.Unlock()
	if running {
		t.Fatalf("broker %d is already running", id)
	}
	file := testproc.WriteProperties(t, c.dir, filepath.Base(c.PropertiesFile(id)), c.properties(id, ports))
	p := testproc.StartBroker(t, file, c.args...)
	ports = map[string]string{}
	for _, name := range c.names() {
		var addr string
		// The broker logs its listeners' lines one after the other.
		testenv.WaitFor(t, testproc.ListenTimeout, fmt.Sprintf("broker %d's %s listener", id, name), func() (bool, string) {
			addr = p.Listener(name)
			return addr != "", ""
		})
		_, ports[name], _ = strings.Cut(addr, "127.0.0.1:")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs[id], c.ports[id] = p, ports
	delete(c.paused, id)
	c.n = max(c.n, int(id))
}

// Stop sends broker id SIGTERM (a controlled shutdown) and waits up to
// StopTimeout for it to exit; an exit other than a clean one fails t
// (without stopping it). It returns how long the broker took.
func (c *Cluster) Stop(t testing.TB, id int32) time.Duration {
	t.Helper()
	p := c.take(t, id)
	start := time.Now()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM broker %d: %v", id, err)
	}
	if err := p.Wait(t, StopTimeout); err != nil {
		t.Errorf("broker %d after SIGTERM: exit %v, want a clean exit", id, err)
	}
	return time.Since(start)
}

// Kill SIGKILLs broker id and waits for the process to be gone. Its
// registration stays in ZooKeeper until its session expires
// (SessionTimeout).
func (c *Cluster) Kill(t testing.TB, id int32) {
	t.Helper()
	_ = c.take(t, id).Stop(t, syscall.SIGKILL)
}

// take removes broker id's process from the cluster and returns it; it
// fails t if the broker is not running.
func (c *Cluster) take(t testing.TB, id int32) *testproc.Broker {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.procs[id]
	if p == nil {
		t.Fatalf("broker %d is not running", id)
	}
	delete(c.procs, id)
	delete(c.paused, id)
	return p
}

// Pause stops broker id with SIGSTOP (testproc.Broker.Pause): it keeps its
// sockets and, until the server expires it, its session, but answers
// nothing. Live leaves it out until Resume.
func (c *Cluster) Pause(t testing.TB, id int32) {
	t.Helper()
	c.Proc(id).Pause(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused[id] = true
}

// Resume continues broker id after Pause.
func (c *Cluster) Resume(t testing.TB, id int32) {
	t.Helper()
	c.Proc(id).Resume(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.paused, id)
}

// Proc returns broker id's process, nil while it is down (not started,
// stopped or killed); its Output is what it logged.
func (c *Cluster) Proc(id int32) *testproc.Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[id]
}

// Addr returns broker id's PLAINTEXT address while its process runs
// (paused too), "" otherwise.
func (c *Cluster) Addr(id int32) string {
	if p := c.Proc(id); p != nil && p.Running() {
		return p.Addr
	}
	return ""
}

// Addrs returns the addresses of the running brokers, by id.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, id := range c.ids() {
		if a := c.Addr(id); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Live returns the ids of the brokers running and not paused.
func (c *Cluster) Live() []int32 {
	var out []int32
	for _, id := range c.ids() {
		c.mu.Lock()
		paused := c.paused[id]
		c.mu.Unlock()
		if c.Addr(id) != "" && !paused {
			out = append(out, id)
		}
	}
	return out
}

// Seeds returns every broker's address, up or down: a broker keeps its
// port, so a long-lived client seeded with them reconnects to restarted
// brokers.
func (c *Cluster) Seeds() []string { return c.SeedsOf(c.ids()...) }

// SeedsOf returns the PLAINTEXT address of each broker of ids, up or
// down; each must have started once.
func (c *Cluster) SeedsOf(ids ...int32) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, id := range ids {
		out = append(out, "127.0.0.1:"+c.ports[id]["PLAINTEXT"])
	}
	return out
}

// N is the highest broker id started so far (after New, Brokers' n);
// Addrs, Live and Seeds range over ids 1..N.
func (c *Cluster) N() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// ids is 1..N.
func (c *Cluster) ids() []int32 {
	var out []int32
	for id := int32(1); id <= int32(c.N()); id++ {
		out = append(out, id)
	}
	return out
}

// Connect is the brokers' zookeeper.connect, with its chroot.
func (c *Cluster) Connect() string { return c.connect }

// Dir is the cluster's temporary directory; files a test adds there
// (keystores, ...) go with it.
func (c *Cluster) Dir() string { return c.dir }

// LogDir is broker id's default log.dirs, Dir()/broker-<id> (a test that
// sets log.dirs through Properties knows its own).
func (c *Cluster) LogDir(id int32) string { return filepath.Join(c.dir, fmt.Sprintf("broker-%d", id)) }

// PropertiesFile is broker id's properties file, Dir()/broker-<id>.properties,
// written anew at each Start.
func (c *Cluster) PropertiesFile(id int32) string {
	return filepath.Join(c.dir, fmt.Sprintf("broker-%d.properties", id))
}

// SessionTimeout is the brokers' zookeeper.session.timeout.ms: how long a
// killed broker stays registered.
func (c *Cluster) SessionTimeout() time.Duration { return c.session }
