package soak

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/loader"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/soak/link"
)

// Names of the clusters, the topic and the jobs.
const (
	Analytics = pipeline.AnalyticsCluster
	Topic     = pipeline.DefaultTopic
	LoaderJob = "soak-load"
	// MirrorGroup is the mirrors' consumer group on every datacenter.
	MirrorGroup = "soak-mirror"
	// brokersPerCluster, with replication factor 3 and
	// min.insync.replicas=2: one broker may be down without stopping
	// acks=all producers.
	brokersPerCluster = 3
)

// Datacenters are the online clusters.
var Datacenters = []string{"dc1", "dc2"}

// broker is one broker process and its addresses.
type broker struct {
	*proc
	cluster string
	id      int
	addr    string // its PLAINTEXT listener
	remote  string // a datacenter broker's REMOTE listener (behind its link's proxy)
	proxied string // the proxy port the REMOTE listener advertises
}

// zkStart makes the soaks of one process (the tests run them side by
// side) pick their ZooKeeper port offsets one at a time: an offset's
// check-ports passes until its ensemble is up.
var zkStart sync.Mutex

// topology starts the processes.
func (s *Soak) startZooKeeper(ctx context.Context) error {
	zkStart.Lock()
	defer zkStart.Unlock()
	zk := filepath.Join(s.cfg.Repo, "scripts", "zk.sh")
	s.zkDir = filepath.Join(s.dir, "zookeeper")
	// A port offset nobody uses: the shared servers of make test use 0.
	for off := 300; off < 3000; off += 137 {
		env := []string{"TRIBUTARY_TEST_PORT_OFFSET=" + strconv.Itoa(off), "TRIBUTARY_ZK_ENSEMBLE_DIR=" + s.zkDir}
		if _, err := script(ctx, s.logPath("zookeeper-script"), env, "bash", zk, "check-ports"); err != nil {
			continue
		}
		s.zkEnv = env
		break
	}
	if s.zkEnv == nil {
		return errors.New("soak: no free ZooKeeper port offset between 300 and 3000")
	}
	// Stopped at the end even if the start fails half-way (or is cancelled).
	s.cleanups = append(s.cleanups, func() error {
		_, err := script(context.Background(), s.logPath("zookeeper-script"), s.zkEnv, "bash", zk, "ensemble-stop")
		return err
	})
	out, err := script(ctx, s.logPath("zookeeper-script"), s.zkEnv, "bash", zk, "ensemble-start")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "export TRIBUTARY_TEST_ZK_ENSEMBLE="); ok {
			s.zk = strings.TrimSpace(v)
		}
	}
	if s.zk == "" {
		return fmt.Errorf("soak: zk.sh ensemble-start printed no ensemble: %q", out)
	}
	return nil
}

// zkControl kills or starts ensemble member n.
func (s *Soak) zkControl(ctx context.Context, action string, n int) error {
	_, err := script(ctx, s.logPath("zookeeper-script"), s.zkEnv, "bash", filepath.Join(s.cfg.Repo, "scripts", "zk.sh"), action, strconv.Itoa(n))
	return err
}

// zkPid returns the pid of ensemble member n, 0 if it is down.
func (s *Soak) zkPid(n int) int {
	b, err := os.ReadFile(filepath.Join(s.zkDir, strconv.Itoa(n), "zk.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func (s *Soak) startHDFS(ctx context.Context) error {
	s.hdfsDir = filepath.Join(s.dir, "hdfs")
	port, err := freePort()
	if err != nil {
		return err
	}
	// Stopped at the end even if the start fails half-way (or is
	// cancelled): stop.sh finds the JVM by its pid file.
	s.cleanups = append(s.cleanups, func() error {
		_, err := script(context.Background(), s.logPath("hdfs-script"), nil, "bash", filepath.Join(s.cfg.Repo, "testing", "hdfs", "stop.sh"), s.hdfsDir)
		return err
	})
	args := []string{"bash", filepath.Join(s.cfg.Repo, "testing", "hdfs", "start.sh"), strconv.Itoa(port), s.hdfsDir, "--datanodes", "2", "--datanode-control"}
	var env []string
	if s.sec != nil {
		args = append(args, "--kerberos", "--protection", kerberosProtection, "--cipher-suites", kerberosCipherSuites)
		// A KDC and secure DataNodes take longer than start.sh's default
		// 120 s on a busy machine, unless the caller chose a bound.
		if os.Getenv("TRIBUTARY_HDFS_START_TIMEOUT") == "" {
			env = append(env, "TRIBUTARY_HDFS_START_TIMEOUT=300")
		}
	}
	out, err := script(ctx, s.logPath("hdfs-script"), env, args...)
	if err != nil {
		return err
	}
	s.hdfsPid, _ = strconv.Atoi(strings.TrimSpace(out))
	s.hdfs = "127.0.0.1:" + strconv.Itoa(port)
	if s.sec != nil {
		return s.readKerberos()
	}
	return nil
}

// dataNode stops or starts DataNode n.
func (s *Soak) dataNode(ctx context.Context, action string, n int) error {
	_, err := script(ctx, s.logPath("hdfs-script"), nil, "bash", filepath.Join(s.cfg.Repo, "testing", "hdfs", "datanode.sh"), s.hdfsDir, action, strconv.Itoa(n))
	return err
}

// chroot is cluster's ZooKeeper connect string.
func (s *Soak) chroot(cluster string) string {
	return s.zk + "/tributary-soak/" + s.runID + "/" + cluster
}

func (s *Soak) startBrokers(ctx context.Context) error {
	for _, c := range s.clusters() {
		var l *link.Link
		if c != Analytics {
			l = link.New(c + "-analytics")
			s.links[c] = l
			s.cleanups = append(s.cleanups, l.Close)
		}
		for id := 1; id <= brokersPerCluster; id++ {
			b := &broker{cluster: c, id: id}
			port, err := freePort()
			if err != nil {
				return err
			}
			b.addr = "127.0.0.1:" + strconv.Itoa(port)
			props := map[string]string{
				"broker.id":                      strconv.Itoa(id),
				"log.dirs":                       filepath.Join(s.dir, c, "broker-"+strconv.Itoa(id)),
				"zookeeper.connect":              s.chroot(c),
				"zookeeper.session.timeout.ms":   strconv.FormatInt(s.t.session.Milliseconds(), 10),
				"num.partitions":                 strconv.Itoa(DefaultPartitions),
				"default.replication.factor":     "3",
				"min.insync.replicas":            "2",
				"audit.topic.replication.factor": "3",
				"audit.topic.num.partitions":     "1",
				"replica.lag.time.max.ms":        "10000",
				"connections.max.idle.ms":        "60000",
			}
			if l != nil {
				// Two listeners: PLAINTEXT for the datacenter's own clients
				// and the other brokers, REMOTE for the mirror in analytics,
				// advertised at the link's proxy so that every broker the
				// mirror learns of is reached through the link.
				rport, err := freePort()
				if err != nil {
					return err
				}
				b.remote = "127.0.0.1:" + strconv.Itoa(rport)
				px, err := l.Listen("127.0.0.1:0", b.remote)
				if err != nil {
					return err
				}
				b.proxied = px.Addr()
				props["listeners"] = "PLAINTEXT://" + b.addr + ",REMOTE://" + b.remote
				props["advertised.listeners"] = "PLAINTEXT://" + b.addr + ",REMOTE://" + b.proxied
				props["listener.security.protocol.map"] = "PLAINTEXT:PLAINTEXT,REMOTE:PLAINTEXT"
				props["inter.broker.listener.name"] = "PLAINTEXT"
			} else {
				props["listeners"] = "PLAINTEXT://" + b.addr
			}
			if s.sec != nil {
				iport, err := freePort()
				if err != nil {
					return err
				}
				s.secureBroker(props, b, "127.0.0.1:"+strconv.Itoa(iport))
			}
			name := fmt.Sprintf("%s-broker-%d", c, id)
			conf, err := s.writeProperties(name+".properties", props)
			if err != nil {
				return err
			}
			b.proc = s.newProc(name, tcpReady(b.addr), s.cfg.Executable, "broker", "--config", conf)
			s.brokers[c] = append(s.brokers[c], b)
		}
	}
	for _, c := range s.clusters() {
		if s.sec != nil {
			if err := s.secureCluster(ctx, c); err != nil {
				return err
			}
		}
		for _, b := range s.brokers[c] {
			if err := b.start(); err != nil {
				return err
			}
		}
	}
	for _, c := range s.clusters() {
		for _, b := range s.brokers[c] {
			if err := b.waitReady(ctx, 2*time.Minute); err != nil {
				return err
			}
		}
		if err := s.createTopics(ctx, c); err != nil {
			return fmt.Errorf("cluster %s: %w", c, err)
		}
	}
	return nil
}

// bootstrap returns cluster's client addresses (PLAINTEXT, or SASL_SSL
// when secured).
func (s *Soak) bootstrap(cluster string) []string {
	var out []string
	for _, b := range s.brokers[cluster] {
		out = append(out, b.addr)
	}
	return out
}

// viaLink returns a datacenter's addresses behind its link.
func (s *Soak) viaLink(cluster string) []string {
	var out []string
	for _, b := range s.brokers[cluster] {
		out = append(out, b.proxied)
	}
	return out
}

// createTopics creates the page-view topic (replication factor 3) and the
// audit topic, and waits for their leaders.
func (s *Soak) createTopics(ctx context.Context, cluster string) error {
	cc, err := s.clientConfig(cluster)
	if err != nil {
		return err
	}
	cl, err := network.NewClient(cc)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for t, n := range map[string]int32{Topic: DefaultPartitions, audit.DefaultTopic: 1} {
		for {
			resp, err := adm.CreateTopic(ctx, n, 3, nil, t)
			if err == nil {
				err = resp.Err
			}
			if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("create topic %s: %w", t, err)
			}
			time.Sleep(500 * time.Millisecond) // brokers still registering
		}
	}
	return s.waitInSync(ctx, cluster, Topic, audit.DefaultTopic)
}

func (s *Soak) startRegistries(ctx context.Context) error {
	var addrs []string
	for i := 1; i <= 2; i++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		addrs = append(addrs, addr)
		name := fmt.Sprintf("registry-%d", i)
		args := []string{s.cfg.Executable, "registry", "--zookeeper", s.chroot(Analytics), "--zookeeper-session-timeout", s.t.session.String(), "--log-level", "warn"}
		if conf, err := s.httpServerConfig(name+".properties", addr); err != nil {
			return err
		} else if conf != "" {
			args = append(args, "--config", conf) // its listeners: https://addr
		} else {
			args = append(args, "--listen", addr)
		}
		p := s.newProc(name, s.httpReady(s.scheme()+"://"+addr+"/subjects"), args...)
		s.registries = append(s.registries, p)
		if err := p.start(); err != nil {
			return err
		}
	}
	for _, p := range s.registries {
		if err := p.waitReady(ctx, time.Minute); err != nil {
			return err
		}
	}
	// One address for every client, in front of both registries: a load
	// balancer skipping the one that is down.
	l := link.New("registry")
	s.cleanups = append(s.cleanups, l.Close)
	px, err := l.NewPool("127.0.0.1:0", addrs)
	if err != nil {
		return err
	}
	s.registryURL = s.scheme() + "://" + px.Addr()
	return nil
}

func (s *Soak) startAudit(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s.auditURL = s.scheme() + "://" + addr
	args := []string{s.cfg.Executable, "audit", "serve", "--dir", filepath.Join(s.dir, "audit"), "--listen", addr, "--grace", "2", "--log-level", "warn"}
	for _, c := range s.clusters() {
		args = append(args, "--cluster", c+"="+strings.Join(s.bootstrap(c), ","))
	}
	httpConf, err := s.httpServerConfig("audit-http.properties", "") // --listen addr
	if err != nil {
		return err
	}
	clientConf, err := s.clientConfigFile("audit-client.properties", "audit", false)
	if err != nil {
		return err
	}
	if httpConf != "" {
		args = append(args, "--config", httpConf, "--command-config", clientConf)
	}
	s.audit = s.newProc("audit", s.httpReady(s.auditURL+"/api/topics"), args...)
	if err := s.audit.start(); err != nil {
		return err
	}
	return s.audit.waitReady(ctx, time.Minute)
}

func (s *Soak) startMirrors(ctx context.Context) error {
	props := map[string]string{
		"target.bootstrap.servers":     strings.Join(s.bootstrap(Analytics), ","),
		"target.name":                  Analytics,
		"topics":                       regexp.QuoteMeta(Topic),
		"group.id":                     MirrorGroup,
		"topic.refresh.interval.ms":    "2000",
		"offset.commit.interval.ms":    "1000",
		"zookeeper.session.timeout.ms": strconv.FormatInt(s.t.session.Milliseconds(), 10),
		"audit.window.ms":              strconv.FormatInt(s.t.auditWindow.Milliseconds(), 10),
	}
	for _, dc := range Datacenters {
		props["source."+dc+".bootstrap.servers"] = strings.Join(s.viaLink(dc), ",")
		props["source."+dc+".zookeeper.connect"] = s.chroot(dc)
		s.clientProps(props, "source."+dc+".", "mirror")
	}
	s.clientProps(props, "target.", "mirror")
	for i := 1; i <= 2; i++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		metrics := "127.0.0.1:" + strconv.Itoa(port)
		props["instance"] = fmt.Sprintf("mirror-%d", i)
		props["metrics.listen"] = metrics
		name := fmt.Sprintf("mirror-%d", i)
		conf, err := s.writeProperties(name+".properties", props)
		if err != nil {
			return err
		}
		p := s.newProc(name, s.httpReady("http://"+metrics+"/metrics"), s.cfg.Executable, "mirror", "--config", conf, "--log-level", "warn")
		s.mirrors = append(s.mirrors, p)
		if err := p.start(); err != nil {
			return err
		}
	}
	for _, p := range s.mirrors {
		if err := p.waitReady(ctx, time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// loaderProps is the loader job's configuration, shared by the loader
// processes and the scheduled runs.
func (s *Soak) loaderProps() map[string]string {
	props := map[string]string{
		"name":                         LoaderJob,
		"bootstrap.servers":            strings.Join(s.bootstrap(Analytics), ","),
		"schema.registry.url":          s.registryURL,
		"topics":                       regexp.QuoteMeta(Topic),
		"output.uri":                   s.outputURI(),
		"codec":                        "deflate", // fastavro reads snappy only with python-cramjam
		"commit.interval.ms":           "2000",
		"zookeeper.connect":            s.chroot(Analytics),
		"zookeeper.session.timeout.ms": strconv.FormatInt(s.t.session.Milliseconds(), 10),
		"audit.cluster":                Analytics,
		"audit.window.ms":              strconv.FormatInt(s.t.auditWindow.Milliseconds(), 10),
	}
	s.clientProps(props, "", "loader")
	s.registryProps(props, "loader")
	s.hdfsProps(props)
	return props
}

func (s *Soak) outputURI() string { return "hdfs://" + s.hdfs + "/soak/" + s.runID }

func (s *Soak) startLoaders(ctx context.Context) error {
	conf, err := s.writeProperties("loader.properties", s.loaderProps())
	if err != nil {
		return err
	}
	var env []string
	if s.cfg.SkipDedupOnce {
		env = append(env, loader.EnvSkipDedupOnce+"=1")
	}
	for i := 1; i <= 2; i++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		metrics := "127.0.0.1:" + strconv.Itoa(port)
		p := s.newProc(fmt.Sprintf("loader-%d", i), s.httpReady("http://"+metrics+"/metrics"), s.cfg.Executable, "loader", "serve",
			"--config", conf, "--metrics-listen", metrics)
		p.env = env
		s.loaders = append(s.loaders, p)
		if err := p.start(); err != nil {
			return err
		}
	}
	for _, p := range s.loaders {
		if err := p.waitReady(ctx, time.Minute); err != nil {
			return err
		}
	}
	if s.cfg.NoScheduler {
		return nil
	}
	jobsFile := filepath.Join(s.dir, "jobs.yaml")
	yaml := fmt.Sprintf("jobs:\n  - name: %s\n    schedule: \"@every %s\"\n    kind: loader\n    args: {config: %q}\n    timeout: 10m\n",
		LoaderJob, s.t.loadEvery, conf)
	if err := os.WriteFile(jobsFile, []byte(yaml), 0o644); err != nil {
		return err
	}
	for i := 1; i <= 2; i++ {
		p := s.newProc(fmt.Sprintf("scheduler-%d", i), nil, s.cfg.Executable, "jobs", "serve", "--config", jobsFile,
			"--zookeeper", s.chroot(Analytics), "--id", fmt.Sprintf("scheduler-%d", i),
			"--zookeeper-session-timeout", s.t.session.String(), "--log-level", "warn")
		p.env = env
		s.schedulers = append(s.schedulers, p)
		if err := p.start(); err != nil {
			return err
		}
	}
	return nil
}

func (s *Soak) startProducers(ctx context.Context) error {
	for _, dc := range Datacenters {
		stats := filepath.Join(s.dir, "producer-"+dc+".json")
		args := []string{s.cfg.Executable, "soak", "produce",
			"--bootstrap", strings.Join(s.bootstrap(dc), ","), "--registry", s.registryURL, "--datacenter", dc,
			"--rate", strconv.FormatFloat(s.cfg.Rate, 'f', -1, 64), "--topic", Topic,
			"--audit-window", s.t.auditWindow.String(), "--audit-interval", "1s", "--stats", stats}
		conf, err := s.clientConfigFile("producer-"+dc+"-client.properties", pipeline.ProducerUser(dc), true)
		if err != nil {
			return err
		}
		if conf != "" {
			args = append(args, "--command-config", conf)
		}
		p := s.newProc("producer-"+dc, fileReady(stats), args...)
		s.producers = append(s.producers, p)
		s.statsFiles = append(s.statsFiles, stats)
		if err := p.start(); err != nil {
			return err
		}
	}
	for _, p := range s.producers {
		if err := p.waitReady(ctx, time.Minute); err != nil {
			return err
		}
	}
	return nil
}

func (s *Soak) newProc(name string, ready func(context.Context) error, args ...string) *proc {
	p := &proc{name: name, args: args, log: s.logPath(name), ready: ready, logger: s.cfg.Logger}
	s.procs = append(s.procs, p)
	return p
}

func (s *Soak) logPath(name string) string { return filepath.Join(s.dir, "logs", name+".log") }

func (s *Soak) writeProperties(name string, props map[string]string) (string, error) {
	var b strings.Builder
	b.WriteString("# Written by the soak (package pipeline/soak).\n")
	if err := properties.Write(&b, props); err != nil {
		return "", err
	}
	path := filepath.Join(s.dir, "config", name)
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

func (s *Soak) clusters() []string { return append(append([]string(nil), Datacenters...), Analytics) }

// The soak's processes listen on ports fixed at start-up (a restarted
// process comes back on its own). They are taken from below Linux's
// ephemeral range (32768-60999) and never handed out twice by one soak:
// a port the kernel picked for "127.0.0.1:0" could be picked again for the
// next, or taken by any outgoing connection's local port before its
// process bound it (a clean-clone make test saw one broker of a secured
// soak exit at once on every restart for two minutes). portLow..portHigh
// holds none of the fixed ports of the test servers (19000 and up,
// 21810 and up); each soak starts at a point of its own (by pid), and a
// port that cannot be bound now is skipped.
const (
	portLow  = 10000
	portHigh = 19000
)

var ports struct {
	sync.Mutex
	next  int
	given map[int]bool
}

// freePort returns a loopback port no other process of this soak was
// given and free at the time of the call.
func freePort() (int, error) {
	ports.Lock()
	defer ports.Unlock()
	if ports.given == nil {
		ports.given = map[int]bool{}
		ports.next = portLow + os.Getpid()*37%(portHigh-portLow)
	}
	for range portHigh - portLow {
		port := ports.next
		ports.next++
		if ports.next >= portHigh {
			ports.next = portLow
		}
		if ports.given[port] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // in use
		}
		ln.Close()
		ports.given[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("soak: no free loopback port in %d-%d", portLow, portHigh-1)
}

func tcpReady(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}
}

func (s *Soak) httpReady(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := s.httpClient().Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	}
}

func fileReady(path string) func(context.Context) error {
	return func(context.Context) error {
		_, err := os.Stat(path)
		return err
	}
}
