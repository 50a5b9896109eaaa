package mirror

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/internal/testkit/zktest"
	"github.com/tributary/tributary/mirror/origin"
)

func TestMain(m *testing.M) { os.Exit(testproc.Main(m)) }

// full reports whether the full sizes were asked for.
func full() bool { return os.Getenv("TRIBUTARY_FULL") == "1" }

// cluster is one single-broker cluster registered in its own chroot of the
// test ZooKeeper (so its topics are in /brokers/topics, where the
// ZooKeeper consumer groups read them), in-process; Stop(t, 1) and
// Restart(t, 1) take it down and bring it back on its port and data.
type cluster struct {
	name string
	*brokertest.Cluster
}

func newCluster(t testing.TB, name string) *cluster {
	t.Helper()
	zk := zktest.Chroot(t, testenv.ZooKeeper(t), "mirror-"+name)
	return &cluster{name: name, Cluster: brokertest.New(t, brokertest.ZooKeeperConnect(zk),
		brokertest.Logger(testenv.Logger(t, slog.LevelWarn).With("cluster", name)))}
}

// rec is what the test produced at one source offset.
type rec struct {
	key, value []byte
	headers    []kgo.RecordHeader
	ts         time.Time
}

type srcPos struct {
	source    string
	partition int32
	offset    int64
}

// produced holds every record a test wrote, by origin.
type produced struct {
	mu   sync.Mutex
	recs map[srcPos]rec
	// perPart counts records per (source, topic partition).
	perPart map[srcPos]int64
	// pad is added to every value's length.
	pad int
}

func newProduced() *produced {
	return &produced{recs: map[srcPos]rec{}, perPart: map[srcPos]int64{}}
}

func (p *produced) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.recs)
}

// produce writes n keyed records (with a header and a timestamp of their
// own) to topic through cl, partitioned by key, and notes them.
func (p *produced) produce(t *testing.T, cl *kgo.Client, source, topic string, _, from, n int) {
	t.Helper()
	ctx := testenv.Context(t, 2*time.Minute)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	for i := from; i < from+n; i++ {
		r := &kgo.Record{
			Topic:     topic,
			Key:       fmt.Appendf(nil, "%s-key-%d", source, i),
			Value:     fmt.Appendf(nil, "%s-value-%d-%s", source, i, bytes.Repeat([]byte{'v'}, i%50+p.pad)),
			Headers:   []kgo.RecordHeader{{Key: "seq", Value: []byte(strconv.Itoa(i))}, {Key: "empty"}},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
		wg.Add(1)
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				select {
				case errc <- err:
				default:
				}
				return
			}
			p.mu.Lock()
			p.recs[srcPos{source, r.Partition, r.Offset}] = rec{r.Key, r.Value, r.Headers, r.Timestamp}
			p.perPart[srcPos{source, r.Partition, 0}]++
			p.mu.Unlock()
		})
	}
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatalf("producing to %s: %v", source, err)
	default:
	}
}

// targetReader reads a target topic from its start, keeping every record
// in the order of its target partition.
type targetReader struct {
	mu       sync.Mutex
	byPart   map[int32][]*kgo.Record
	distinct map[srcPos]bool
	total    int
	bad      error
}

func readTarget(t *testing.T, c *cluster, topic string, opts ...kgo.Opt) *targetReader {
	t.Helper()
	r := &targetReader{byPart: map[int32][]*kgo.Record{}, distinct: map[srcPos]bool{}}
	cl := c.Client(t, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(50 * time.Millisecond)}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(rc *kgo.Record) {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.byPart[rc.Partition] = append(r.byPart[rc.Partition], rc)
				r.total++
				o, err := recordOrigin(rc)
				if err != nil {
					r.bad = err
					return
				}
				r.distinct[o] = true
			})
		}
	}()
	return r
}

func recordOrigin(rc *kgo.Record) (srcPos, error) {
	for _, h := range rc.Headers {
		if h.Key == origin.Header {
			s, p, o, err := origin.Parse(h.Value)
			return srcPos{s, p, o}, err
		}
	}
	return srcPos{}, fmt.Errorf("target record %s-%d@%d has no %s header", rc.Topic, rc.Partition, rc.Offset, origin.Header)
}

func (r *targetReader) counts() (distinct, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.distinct), r.total
}

// waitComplete waits until the target holds every produced record.
func (r *targetReader) waitComplete(t *testing.T, p *produced, d time.Duration) {
	t.Helper()
	testenv.WaitFor(t, d, "every produced record in the target", func() (bool, string) {
		want := p.len()
		got, total := r.counts()
		return got >= want, fmt.Sprintf("%d of %d distinct records (%d with duplicates)", got, want, total)
	})
}

// verify checks the target against what was produced: every record
// arrived with key, value, headers and timestamp equal; per source
// partition, records first seen come in offset order; a record seen again
// belongs to a run re-sent from an offset the group committed (starts
// holds, per source partition, every committed offset observed, and 0;
// nil skips that check).
// It returns the number of duplicates.
func (r *targetReader) verify(t *testing.T, p *produced, starts func(source string, partition int32) map[int64]bool) int {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.bad != nil {
		t.Fatal(r.bad)
	}
	type key struct {
		source    string
		partition int32
	}
	next := map[key]int64{}
	last := map[key]int64{}
	dups := 0
	for tp, recs := range r.byPart {
		for _, rc := range recs {
			o, err := recordOrigin(rc)
			if err != nil {
				t.Fatal(err)
			}
			if o.partition != tp {
				t.Fatalf("source partition %d landed in target partition %d", o.partition, tp)
			}
			want, ok := p.recs[o]
			if !ok {
				t.Fatalf("target holds %v, which was never produced", o)
			}
			if !bytes.Equal(rc.Key, want.key) || !bytes.Equal(rc.Value, want.value) || !rc.Timestamp.Equal(want.ts) {
				t.Fatalf("%v: key %q value %q ts %v, want %q %q %v", o, rc.Key, rc.Value, rc.Timestamp, want.key, want.value, want.ts)
			}
			if len(rc.Headers) != len(want.headers)+1 {
				t.Fatalf("%v: headers %v, want %v plus the origin", o, rc.Headers, want.headers)
			}
			for i, h := range want.headers {
				if rc.Headers[i].Key != h.Key || !bytes.Equal(rc.Headers[i].Value, h.Value) {
					t.Fatalf("%v: header %d is %v, want %v", o, i, rc.Headers[i], h)
				}
			}
			k := key{o.source, o.partition}
			prev, seen := last[k]
			last[k] = o.offset
			switch {
			case o.offset == next[k]:
				next[k]++
			case o.offset > next[k]:
				t.Fatalf("%v arrived before offset %d of its partition (order broken or a record lost)", o, next[k])
			default:
				dups++
				// A re-sent run starts where a commit left the group.
				if starts != nil && (!seen || o.offset != prev+1) && !starts(o.source, o.partition)[o.offset] {
					t.Fatalf("%v re-sent, but a run starting there does not start at a committed offset (committed: %v)",
						o, slices.Sorted(maps.Keys(starts(o.source, o.partition))))
				}
			}
		}
	}
	for o, n := range p.perPart {
		if got := next[key{o.source, o.partition}]; got != n {
			t.Fatalf("source %s partition %d: %d of %d records arrived in order", o.source, o.partition, got, n)
		}
	}
	return dups
}

// proc is a `tributary mirror` child process.
type proc struct {
	cmd    *exec.Cmd
	out    testproc.SyncBuffer
	exited chan error
}

func startMirror(t *testing.T, config string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(testproc.Binary(t), "mirror", "--config", config), exited: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.running() {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("output of mirror %d:\n%s", p.cmd.Process.Pid, p.out.String())
		}
	})
	return p
}

func (p *proc) running() bool {
	select {
	case err := <-p.exited:
		p.exited <- err
		return false
	default:
		return true
	}
}

// signal sends sig and waits (bounded) for the exit. A signal the mirror
// handles (SIGTERM, SIGINT) waits first for its "mirror started" line,
// logged once its handler is installed: sent sooner, Go's default action
// kills the process (a restarted mirror with nothing left to copy was
// SIGTERMed before it had started, and exited "signal: terminated").
func (p *proc) signal(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	if sig != syscall.SIGKILL {
		testenv.WaitFor(t, 90*time.Second, "the mirror to start before "+sig.String(), func() (bool, string) {
			return !p.running() || strings.Contains(p.out.String(), "mirror started"), lastLine(p.out.String())
		})
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case err := <-p.exited:
		p.exited <- err
		return err
	case <-time.After(90 * time.Second):
		t.Fatalf("mirror still running 90 s after %v:\n%s", sig, p.out.String())
		return nil
	}
}

var metricsLine = regexp.MustCompile(`msg="metrics listening" addr=(\S+)`)

// metricsAddr waits for the mirror's metrics listener.
func (p *proc) metricsAddr(t *testing.T) string {
	t.Helper()
	var addr string
	testenv.WaitFor(t, 30*time.Second, "mirror metrics listener", func() (bool, string) {
		if m := metricsLine.FindStringSubmatch(p.out.String()); m != nil {
			addr = m[1]
			return true, ""
		}
		return false, p.out.String()
	})
	return addr
}

// rssBytes is the process's resident set size.
func (p *proc) rssBytes(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("no VmRSS in %s", data)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// endOffsets lists a topic's end offsets on c.
func endOffsets(t testing.TB, c *cluster, topic string) map[int32]int64 {
	t.Helper()
	listed, err := kadm.NewClient(c.Client(t)).ListEndOffsets(testenv.Context(t, 30*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// lastLine is the last line of out, for a wait's progress message.
func lastLine(out string) string {
	out = strings.TrimRight(out, "\n")
	return out[strings.LastIndexByte(out, '\n')+1:]
}
