package tablestest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/devcluster"
	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/registrytest"
	"github.com/tributary/tributary/internal/testkit/tailtest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/jobs"
	"github.com/tributary/tributary/jobs/tables"
)

func TestMain(m *testing.M) { os.Exit(testproc.Main(m)) }

// rig is a cluster with its registry, an HDFS base for the loader's
// output and a scheduler running loader and compaction as child processes.
type rig struct {
	cl      *devcluster.Cluster
	kc      *kgo.Client
	rc      *serde.RegistryClient
	ser     *serde.Serializer
	fsys    filesys.FS
	base    string // path on fsys
	baseURI string
	dir     string
	metrics *prometheus.Registry
	store   *jobs.Store
}

func newRig(t *testing.T, topics ...string) *rig {
	t.Helper()
	tail := tailtest.Start(t, tailtest.Config{Topics: topics, Prefix: "tablestest"})
	return &rig{dir: t.TempDir(), metrics: prometheus.NewRegistry(), cl: tail.Cluster, kc: tail.Kafka, rc: tail.Registry,
		ser: tail.Serializer, fsys: tail.FS, base: tail.Base, baseURI: tail.BaseURI}
}

// startScheduler runs a scheduler of the jobs in yaml until t ends.
func (r *rig) startScheduler(t *testing.T, yaml string) {
	t.Helper()
	list, err := jobs.ParseConfig([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jobs.New(jobs.Config{Jobs: list, ID: "tablestest", Executable: testproc.Binary(t),
		Connect: r.cl.Connector(), PollInterval: 200 * time.Millisecond, Registerer: r.metrics})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	sess, err := r.cl.Connector()(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	r.store = jobs.NewStore(sess, "", 0)
}

// run requests a run of job (as `tributary jobs run`) and returns its record.
func (r *rig) run(t *testing.T, job string) *jobs.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	var req string
	testenv.WaitFor(t, 30*time.Second, "job "+job+" published", func() (bool, string) {
		var err error
		req, err = r.store.Request(ctx, job)
		return err == nil, fmt.Sprint(err)
	})
	run, err := r.store.WaitRequest(ctx, job, req, 4*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s run (%v): %s, summary %s, error %.300s", job, time.Since(began).Round(time.Millisecond), run.Status, run.Summary, run.Error)
	return run
}

// produce sends one record of schema per timestamp to topic, value
// fields from value(i), and waits for the acknowledgements.
func (r *rig) produce(t *testing.T, topic, schema string, ts []time.Time, value func(i int) map[string]any) {
	t.Helper()
	ctx := context.Background()
	var recs []*kgo.Record
	for i, at := range ts {
		v, err := r.ser.Encode(ctx, topic+"-value", schema, value(i))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: topic, Value: v, Timestamp: at})
	}
	if err := r.kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// setCompatibility sets a subject's compatibility level in the registry.
func (r *rig) setCompatibility(t *testing.T, subject, level string) {
	registrytest.SetCompatibility(t, r.cl.RegistryURL(), subject, level)
}

// metastore returns a client of the metastore at uri reading database db.
func (r *rig) metastore(t *testing.T, uri, db string) *tables.Metastore {
	t.Helper()
	m, err := tables.New(tables.Config{URIs: []string{uri}, Database: db}, r.rc, tables.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// checkTable checks that topic's table holds exactly the partitions the
// files publish (package hours: every ready hour, at its location, in its
// format) and returns them.
func (r *rig) checkTable(t *testing.T, m *tables.Metastore, topic string) []tables.RegisteredPartition {
	t.Helper()
	got, err := m.Registered(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := hours.Published(r.fsys, r.base, topic)
	if err != nil {
		t.Fatal(err)
	}
	var g, w []string
	for _, p := range got {
		loc := p.Location
		if i := strings.Index(loc, "://"); i >= 0 {
			loc = loc[i+3:]
			loc = loc[strings.Index(loc, "/"):]
		}
		g = append(g, p.Value+" "+p.Format+" "+loc)
	}
	for _, st := range pub {
		w = append(w, tables.PartitionValue(st.Start, st.End.Sub(st.Start))+" "+string(st.Format)+" "+st.Location)
	}
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Fatalf("table of %s:\n%s\nthe files publish:\n%s", topic, strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	return got
}

// states lists topic's partition states, oldest first.
func (r *rig) states(t *testing.T, topic string) string {
	t.Helper()
	all, err := hours.Statuses(r.fsys, r.base, topic, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, st := range all {
		s = append(s, st.State)
	}
	return strings.Join(s, " ")
}

// gauge returns the value of the metric name with labels in reg (-1 if absent).
func gauge(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
		}
	}
	return -1
}

// child is a tributary child process of a test (the mirror, the audit
// service): killed when the test ends, its output logged if it failed.
type child struct {
	name   string
	cmd    *exec.Cmd
	out    testproc.SyncBuffer
	exited chan error
}

// startChild runs `tributary args...` (testproc.Binary) with env added.
func startChild(t *testing.T, name string, env []string, args ...string) *child {
	t.Helper()
	c := &child{name: name, cmd: exec.Command(testproc.Binary(t), args...), exited: make(chan error, 1)}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if c.running() {
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
		if t.Failed() {
			t.Logf("output of %s (pid %d):\n%s", name, c.cmd.Process.Pid, c.out.String())
		}
	})
	return c
}

// exitErr returns the exit error of a process that has exited.
func (c *child) exitErr() error {
	err := <-c.exited
	c.exited <- err
	return err
}

func (c *child) running() bool {
	select {
	case err := <-c.exited:
		c.exited <- err
		return false
	default:
		return true
	}
}

// kill SIGKILLs the process and waits (bounded) until it is gone; it fails
// t if the process had exited before.
func (c *child) kill(t *testing.T) {
	t.Helper()
	if !c.running() {
		t.Fatalf("%s exited before its SIGKILL: %v\n%s", c.name, c.exitErr(), c.out.String())
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case err := <-c.exited:
		c.exited <- err
		if !testproc.KilledBySIGKILL(err) {
			t.Fatalf("%s: exit %v after SIGKILL", c.name, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still running 30 s after SIGKILL", c.name)
	}
}

// waitLine waits until the process's output matches re and returns the
// first submatch.
func (c *child) waitLine(t *testing.T, re *regexp.Regexp, d time.Duration) string {
	t.Helper()
	var got string
	testenv.WaitFor(t, d, c.name+" logging "+re.String(), func() (bool, string) {
		if m := re.FindStringSubmatch(c.out.String()); m != nil {
			got = m[1]
			return true, ""
		}
		if !c.running() {
			t.Fatalf("%s exited: %v\n%s", c.name, c.exitErr(), c.out.String())
		}
		return false, c.out.String()
	})
	return got
}
