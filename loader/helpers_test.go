package loader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/filesys/filesystest"
	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/registrytest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/loader"
)

// childEnv carries a loader.Config (as JSON) to a child process: the test
// binary re-executed, which runs one loader run and exits (see TestMain).
const (
	childEnv        = "LOADER_TEST_CHILD_CONFIG"
	childCommitsEnv = "LOADER_TEST_CHILD_COMMITS"
)

func TestMain(m *testing.M) {
	if cfgJSON := os.Getenv(childEnv); cfgJSON != "" {
		os.Exit(childMain(cfgJSON))
	}
	os.Exit(m.Run())
}

func childMain(cfgJSON string) int {
	var cfg loader.Config
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	crashAt, err := loader.ParseCrashPoint(os.Getenv(loader.CrashEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg.CrashAt = crashAt
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := loader.New(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "new:", err)
		return 1
	}
	defer l.Close()
	if f := os.Getenv(childCommitsEnv); f != "" {
		out, err := os.OpenFile(f, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer out.Close()
		l.OnCommit(func(ci loader.CommitInfo) {
			b, _ := json.Marshal(ci)
			out.Write(append(b, '\n'))
			out.Sync()
		})
	}
	sum, err := l.Run(ctx)
	b, _ := json.Marshal(sum)
	fmt.Println(string(b))
	if err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		return 1
	}
	return 0
}

// child is a loader run in a child process.
type child struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	exited chan struct{}
	err    error
}

func startChild(t *testing.T, cfg loader.Config, env ...string) *child {
	t.Helper()
	cfg.Logger = nil
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^$"), exited: make(chan struct{})}
	c.cmd.Env = append(append(os.Environ(), childEnv+"="+string(b)), env...)
	sw := &syncWriter{w: &c.out} // one lock for both streams
	c.cmd.Stdout, c.cmd.Stderr = sw, sw
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.exited
	})
	return c
}

func (c *child) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-c.exited:
		return c.err
	case <-time.After(3 * time.Minute):
		t.Fatalf("loader child did not exit:\n%s", c.output())
		return nil
	}
}

func (c *child) output() string {
	c.cmd.Stdout.(*syncWriter).mu.Lock()
	defer c.cmd.Stdout.(*syncWriter).mu.Unlock()
	return c.out.String()
}

func killedBySIGKILL(err error) bool {
	ee, ok := err.(*exec.ExitError)
	if !ok {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// runChild runs one loader run in a child and fails t unless it exits 0.
func runChild(t *testing.T, cfg loader.Config, env ...string) loader.Summary {
	t.Helper()
	c := startChild(t, cfg, env...)
	if err := c.wait(t); err != nil {
		t.Fatalf("loader run: %v\n%s", err, c.output())
	}
	var sum loader.Summary
	for _, line := range strings.Split(c.output(), "\n") {
		if strings.HasPrefix(line, "{\"records\"") {
			json.Unmarshal([]byte(line), &sum)
		}
	}
	return sum
}

// cluster is an in-process broker (its fixture's methods: Addr,
// CreateTopic, ...) and schema registry, with a serializer and a manually
// partitioning client.
type cluster struct {
	*brokertest.Cluster
	registry string
	reg      *serde.RegistryClient
	ser      *serde.Serializer
	adm      *kadm.Client
	cl       *kgo.Client
}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	c := &cluster{Cluster: brokertest.New(t), registry: registrytest.Serve(t)}
	var err error
	c.reg, err = serde.NewRegistryClient(serde.ClientConfig{URL: c.registry})
	if err != nil {
		t.Fatal(err)
	}
	c.ser = serde.NewSerializer(c.reg, serde.SerializerConfig{})
	c.cl = c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.DefaultProduceTopic("unused"))
	c.adm = kadm.NewClient(c.cl)
	return c
}

func (c *cluster) produce(t testing.TB, recs []*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const chunk = 20000
	for i := 0; i < len(recs); i += chunk {
		if err := c.cl.ProduceSync(ctx, recs[i:min(i+chunk, len(recs))]...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

// Two versions of one subject: v2 adds a field with a default.
const (
	schemaV1 = `{"type":"record","name":"PageView","namespace":"test","fields":[{"name":"id","type":"long"},{"name":"page","type":"string"}]}`
	schemaV2 = `{"type":"record","name":"PageView","namespace":"test","fields":[{"name":"id","type":"long"},{"name":"page","type":"string"},{"name":"ref","type":"string","default":""}]}`
)

// dataset describes the records a test produced: record i has id i, is
// in partition i % partitions, has timestamp start + i*span/n, and is
// encoded with v1 when i is even, v2 when odd.
type dataset struct {
	topic      string
	n          int
	partitions int32
	start      time.Time
	span       time.Duration
}

func (d dataset) ts(i int) time.Time {
	return d.start.Add(time.Duration(int64(d.span) / int64(d.n) * int64(i)))
}

func page(i int) string { return fmt.Sprintf("/page/%d", i%997) }
func ref(i int) string  { return fmt.Sprintf("ref-%d", i%13) }

func (c *cluster) produceDataset(t testing.TB, d dataset) {
	t.Helper()
	ctx := context.Background()
	recs := make([]*kgo.Record, 0, d.n)
	for i := 0; i < d.n; i++ {
		var v []byte
		var err error
		if i%2 == 0 {
			v, err = c.ser.Encode(ctx, d.topic+"-value", schemaV1, map[string]any{"id": int64(i), "page": page(i)})
		} else {
			v, err = c.ser.Encode(ctx, d.topic+"-value", schemaV2, map[string]any{"id": int64(i), "page": page(i), "ref": ref(i)})
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: d.topic, Partition: int32(i) % d.partitions, Value: v, Timestamp: d.ts(i)})
	}
	c.produce(t, recs)
}

// fsCase is one file system under test.
type fsCase struct {
	name string
	open func(t *testing.T) (fsys filesys.FS, base, uri string)
	// options are the HDFS client options the loader needs for it (nil:
	// none).
	options func(t *testing.T) filesys.HDFSOptions
}

// config is baseConfig writing to uri on fc.
func (fc fsCase) config(t *testing.T, c *cluster, job, topics, uri string) loader.Config {
	cfg := baseConfig(c, job, topics, uri)
	if fc.options != nil {
		cfg.HDFS = fc.options(t)
	}
	return cfg
}

// kerberizedFileSystems are the Kerberized test HDFS clusters, one per
// data transfer protection; the tests of the commit protocol run on them
// as well as on fileSystems.
var kerberizedFileSystems = func() []fsCase {
	var out []fsCase
	for _, protection := range testenv.KerberizedHDFSProtections {
		out = append(out, fsCase{"hdfs-kerberos-" + protection,
			func(t *testing.T) (filesys.FS, string, string) {
				fsys, base, uri, _ := filesystest.KerberizedHDFS(t, protection)
				return fsys, base, uri
			},
			func(t *testing.T) filesys.HDFSOptions {
				return filesystest.KerberosOptions(testenv.SecureHDFS(t, protection))
			}})
	}
	return out
}()

var fileSystems = []fsCase{
	{"local", func(t *testing.T) (filesys.FS, string, string) {
		fsys, base := filesystest.Local(t)
		return fsys, base, "file://" + base
	}, nil},
	{"hdfs", func(t *testing.T) (filesys.FS, string, string) { return filesystest.HDFSURI(t) }, nil},
}

// dataFiles lists the data files under base (skipping "_" and "."
// entries), as paths relative to base.
func dataFiles(t *testing.T, fsys filesys.FS, base string) []string {
	t.Helper()
	var out []string
	var walk func(dir, rel string)
	walk = func(dir, rel string) {
		list, err := fsys.ReadDir(dir)
		if err != nil {
			t.Fatalf("readdir %s: %v", dir, err)
		}
		for _, fi := range list {
			if strings.HasPrefix(fi.Name(), "_") || strings.HasPrefix(fi.Name(), ".") {
				continue
			}
			if fi.IsDir() {
				walk(path.Join(dir, fi.Name()), path.Join(rel, fi.Name()))
			} else {
				out = append(out, path.Join(rel, fi.Name()))
			}
		}
	}
	walk(base, "")
	sort.Strings(out)
	return out
}

// readAll reads every record of every data file with goavro's container
// file reader: id -> (file, record).
func readAll(t *testing.T, fsys filesys.FS, base string) map[int64][]landed {
	t.Helper()
	got := map[int64][]landed{}
	for _, f := range dataFiles(t, fsys, base) {
		b, err := filesys.ReadFile(fsys, path.Join(base, f))
		if err != nil {
			t.Fatal(err)
		}
		r, err := goavro.NewOCFReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for r.Scan() {
			v, err := r.Read()
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			m := v.(map[string]any)
			got[m["id"].(int64)] = append(got[m["id"].(int64)], landed{file: f, rec: m})
		}
		if r.Err() != nil {
			t.Fatalf("%s: %v", f, r.Err())
		}
	}
	return got
}

type landed struct {
	file string
	rec  map[string]any
}

// checkExactlyOnce checks that every record of d landed exactly once, with
// its content, in the file of its partition, hour and schema version.
func checkExactlyOnce(t *testing.T, d dataset, got map[int64][]landed) {
	t.Helper()
	bad := 0
	for i := 0; i < d.n && bad < 10; i++ {
		l := got[int64(i)]
		if len(l) != 1 {
			t.Errorf("record %d landed %d times %v", i, len(l), l)
			bad++
			continue
		}
		if err := checkRecord(d, i, l[0].file, l[0].rec); err != nil {
			t.Error(err)
			bad++
		}
	}
	if len(got) != d.n {
		t.Errorf("%d distinct ids landed, want %d", len(got), d.n)
	}
}

func checkRecord(d dataset, i int, file string, rec map[string]any) error {
	if rec["page"] != page(i) {
		return fmt.Errorf("record %d: page %v, want %s", i, rec["page"], page(i))
	}
	wantFields := 2
	if i%2 == 1 {
		wantFields = 3
		if rec["ref"] != ref(i) {
			return fmt.Errorf("record %d: ref %v, want %s", i, rec["ref"], ref(i))
		}
	}
	if len(rec) != wantFields {
		return fmt.Errorf("record %d has fields %v, want %d (its writer schema's)", i, rec, wantFields)
	}
	wantDir, wantPart := hours.Dir("", d.topic, d.ts(i)), int32(i)%d.partitions
	lf, err := hours.ParseLoaderFile(path.Base(file))
	if err != nil || path.Dir(file) != wantDir || lf.Topic != d.topic || lf.Partition != wantPart || lf.Format != hours.Avro {
		return fmt.Errorf("record %d in %s, want an Avro file of partition %d in %s (%v)", i, file, wantPart, wantDir, err)
	}
	return nil
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
