package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// Recorded request frames of real clients, the fuzzer's seeds: one file per
// client, each a sequence of frames as sent on the wire (4-byte big-endian
// size, then the request). Re-record with TRIBUTARY_RECORD_FRAMES=1.
var frameFiles = []string{"testdata/frames/franz-go.bin", "testdata/frames/kcat.bin"}

// recordingProxy forwards connections to a broker and keeps a copy of every
// request frame clients send.
type recordingProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	frames [][]byte
	wg     sync.WaitGroup
}

func newRecordingProxy(t testing.TB) *recordingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &recordingProxy{ln: ln}
}

func (p *recordingProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(c, s); c.Close() }()
		go func() {
			defer p.wg.Done()
			defer s.Close()
			r := bufio.NewReader(c)
			for {
				var size [4]byte
				if _, err := io.ReadFull(r, size[:]); err != nil {
					return
				}
				body := make([]byte, binary.BigEndian.Uint32(size[:]))
				if _, err := io.ReadFull(r, body); err != nil {
					return
				}
				p.mu.Lock()
				p.frames = append(p.frames, body)
				p.mu.Unlock()
				if _, err := s.Write(append(size[:], body...)); err != nil {
					return
				}
			}
		}()
	}
}

// take returns the frames recorded so far and starts a new recording.
func (p *recordingProxy) take() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.frames
	p.frames = nil
	return f
}

func writeFrames(t testing.TB, path string, frames [][]byte) {
	t.Helper()
	var out []byte
	for _, f := range frames {
		out = binary.BigEndian.AppendUint32(out, uint32(len(f)))
		out = append(out, f...)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFrames(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("recorded frames: %v (re-record with TRIBUTARY_RECORD_FRAMES=1)", err)
	}
	var frames [][]byte
	for len(b) >= 4 {
		n := int(binary.BigEndian.Uint32(b))
		if 4+n > len(b) {
			t.Fatalf("%s: truncated frame", path)
		}
		frames = append(frames, b[4:4+n])
		b = b[4+n:]
	}
	return frames
}

// recordClientFrames runs franz-go and kcat workloads through a recording
// proxy against an in-process broker advertising the proxy, so that every
// connection the clients open is recorded.
func recordClientFrames(t *testing.T) {
	proxy := newRecordingProxy(t)
	b := newTestBroker(t, func(c *config.Config) {
		c.AdvertisedListeners = "PLAINTEXT://" + proxy.ln.Addr().String()
		c.NumPartitions = 2
	})
	proxy.target = b.Addr()
	go proxy.serve()
	defer func() { proxy.ln.Close() }()
	addr := proxy.ln.Addr().String()
	ctx := testenv.Context(t, 2*time.Minute)

	// franz-go: admin, idempotent and plain produce, direct and group consume.
	cl := newClient(t, addr, kgo.ClientID("fuzz-seed"), kgo.AllowAutoTopicCreation())
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopics(ctx, 2, 1, map[string]*string{"retention.ms": kmsg.StringPtr("3600000")}, "rec-a"); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		r := &kgo.Record{Topic: "rec-a", Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprint("value ", i)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "rec-auto", Value: []byte("auto")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	_, _ = adm.DescribeTopicConfigs(ctx, "rec-a")
	_, _ = adm.ListEndOffsets(ctx, "rec-a")
	_, _ = adm.ListStartOffsets(ctx, "rec-a")
	cons := newClient(t, addr, kgo.ConsumeTopics("rec-a"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for n := 0; n < 20; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("consume timed out")
		}
		n += fs.NumRecords()
	}
	grp := newClient(t, addr, kgo.ConsumeTopics("rec-a"), kgo.ConsumerGroup("rec-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	gctx, gcancel := context.WithTimeout(ctx, 20*time.Second)
	for n := 0; n < 20 && gctx.Err() == nil; {
		n += grp.PollFetches(gctx).NumRecords()
	}
	gcancel()
	_ = grp.CommitUncommittedOffsets(ctx)
	if _, err := adm.DeleteTopics(ctx, "rec-auto"); err != nil {
		t.Fatal(err)
	}
	cons.Close()
	grp.Close()
	cl.Close()
	franz := proxy.take()

	// kcat: metadata, produce (plain, keyed, compressed, idempotent), consume.
	runKcat(t, "", "-b", addr, "-L")
	runKcat(t, "k1:v1\nk2:v2\n", "-b", addr, "-P", "-t", "rec-k", "-K", ":")
	runKcat(t, "z1\nz2\n", "-b", addr, "-P", "-t", "rec-k", "-z", "lz4")
	runKcat(t, "i1\n", "-b", addr, "-P", "-t", "rec-k", "-X", "enable.idempotence=true")
	runKcat(t, "", "-b", addr, "-C", "-t", "rec-k", "-o", "beginning", "-e")
	runKcat(t, "", "-b", addr, "-Q", "-t", "rec-k:0:0")
	kc := proxy.take()
	writeFrames(t, frameFiles[0], franz)
	writeFrames(t, frameFiles[1], kc)
	t.Logf("recorded %d franz-go and %d kcat frames", len(franz), len(kc))
}

// TestRecordedClientFrames checks the fuzzer's seeds: both clients' frames
// are there, every one decodes as a request this broker implements, and
// together they cover the APIs real clients use (re-recorded first when
// TRIBUTARY_RECORD_FRAMES=1).
func TestRecordedClientFrames(t *testing.T) {
	if os.Getenv("TRIBUTARY_RECORD_FRAMES") != "" {
		recordClientFrames(t)
	}
	b := &Broker{}
	for _, path := range frameFiles {
		frames := readFrames(t, path)
		keys := map[string]int{}
		for i, f := range frames {
			r, err := b.decodeRequest(f)
			if err != nil {
				t.Fatalf("%s frame %d: %v", path, i, err)
			}
			keys[kmsg.NameForKey(r.key)]++
		}
		for _, api := range []string{"ApiVersions", "Metadata", "Produce", "Fetch"} {
			if keys[api] == 0 {
				t.Errorf("%s: no %s frame among %v", path, api, keys)
			}
		}
		t.Logf("%s: %d frames %v", path, len(frames), keys)
	}
}

// mutate returns a damaged copy of a recorded frame body: flipped bytes,
// boundary values over integers, truncation, extension, a splice with
// another frame or another API version.
func mutate(rng *rand.Rand, frames [][]byte) []byte {
	src := frames[rng.IntN(len(frames))]
	f := append([]byte(nil), src...)
	if rng.IntN(2) == 0 {
		// Half keep their structure and change only names and values:
		// the requests that get served (and create topics), as the
		// issue's fuzzer found.
		for i := range f {
			if f[i] >= 'a' && f[i] <= 'z' && rng.IntN(8) == 0 {
				f[i] = byte('a' + rng.IntN(26))
			}
		}
		return f
	}
	for range 1 + rng.IntN(3) {
		if len(f) == 0 {
			f = append(f, byte(rng.IntN(256)))
		}
		switch rng.IntN(8) {
		case 0, 1: // flip bytes
			for range 1 + rng.IntN(4) {
				f[rng.IntN(len(f))] ^= byte(1 + rng.IntN(255))
			}
		case 2: // a boundary value over a 16- or 32-bit integer
			vals := []uint32{0, 0xffffffff, 0x7fffffff, 0x80000000, 1, 0xffff, 0x7fff}
			v := vals[rng.IntN(len(vals))]
			if i := rng.IntN(len(f)); i+4 <= len(f) {
				binary.BigEndian.PutUint32(f[i:], v)
			} else if i+2 <= len(f) {
				binary.BigEndian.PutUint16(f[i:], uint16(v))
			}
		case 3: // truncate
			f = f[:rng.IntN(len(f))]
		case 4: // extend with noise
			for range 1 + rng.IntN(64) {
				f = append(f, byte(rng.IntN(256)))
			}
		case 5: // splice the tail of another frame
			o := frames[rng.IntN(len(frames))]
			cut := rng.IntN(len(f) + 1)
			f = append(f[:cut], o[rng.IntN(len(o)+1):]...)
		case 6: // another version of the same API
			if len(f) >= 4 {
				binary.BigEndian.PutUint16(f[2:], uint16(rng.IntN(20)))
			}
		case 7: // rewrite a byte of a string (new topic names)
			for i := range f {
				if f[i] >= 'a' && f[i] <= 'z' && rng.IntN(8) == 0 {
					f[i] = byte('a' + rng.IntN(26))
				}
			}
		}
	}
	return f
}

// fuzzFrames is the number of mutated frames: 100,000 in make test,
// FUZZ_BROKER_FRAMES (make fuzz-broker: 1,000,000) otherwise.
func fuzzFrames() int {
	if n, err := strconv.Atoi(os.Getenv("FUZZ_BROKER_FRAMES")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// procStatus reads a field of /proc/PID/status ("VmRSS").
func procStatus(t testing.TB, pid int, field string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + field + `:\s*(.*)$`).FindSubmatch(b)
	if m == nil {
		return "?"
	}
	return strings.TrimSpace(string(m[1]))
}

// TestFuzzRecordedFrames sends mutated copies of real clients' request
// frames (franz-go and kcat, recorded) to a broker process with Kafka's
// defaults (auto.create.topics.enable=true), over several connections that
// reconnect whenever the broker closes them; then a real client round trip
// must succeed. The broker must not die, its descriptors stay within its
// budget, and its log stays small (repeated errors are rate limited).
func TestFuzzRecordedFrames(t *testing.T) {
	var seeds [][]byte
	for _, path := range frameFiles {
		seeds = append(seeds, readFrames(t, path)...)
	}
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}
	if m := os.Getenv("FUZZ_BROKER_METRICS"); m != "" {
		props["metrics.listen"] = m // for profiling the broker under the flood
	}
	p := testproc.StartBroker(t, writeProperties(t, props))
	total := fuzzFrames()
	fdsBefore := procFDs(t, p.Pid())
	const workers = 8
	var sent, conns, answered, timeouts atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			var c net.Conn
			var closed chan struct{}
			var responses chan struct{}
			timer := time.NewTimer(time.Hour)
			for sent.Load() < int64(total) {
				if c == nil {
					var err error
					c, err = net.DialTimeout("tcp", p.Addr, 5*time.Second)
					if err != nil {
						t.Errorf("broker stopped accepting after %d frames: %v", sent.Load(), err)
						return
					}
					conns.Add(1)
					closed, responses = make(chan struct{}), make(chan struct{}, 64)
					go func(c net.Conn, closed, responses chan struct{}) {
						defer close(closed) // EOF: the broker closed the connection
						r := bufio.NewReader(c)
						var size [4]byte
						for {
							if _, err := io.ReadFull(r, size[:]); err != nil {
								return
							}
							if _, err := r.Discard(int(binary.BigEndian.Uint32(size[:]))); err != nil {
								return
							}
							select {
							case responses <- struct{}{}:
							default:
							}
						}
					}(c, closed, responses)
				}
				body := mutate(rng, seeds)
				frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
				if rng.IntN(50) == 0 { // sometimes a size that lies
					binary.BigEndian.PutUint32(frame, uint32(len(body)+rng.IntN(8)-4))
				}
				frame = append(frame, body...)
				_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if _, err := c.Write(frame); err != nil {
					c.Close()
					c = nil
					continue
				}
				sent.Add(1)
				// Pace by the broker: wait for an answer or the close. A
				// request that gets neither within 20 ms (acks=0, a size
				// that lies, a long poll with a huge max wait, a slow
				// topic creation) ends the connection, as a client that
				// gave up would.
				timer.Reset(20 * time.Millisecond)
				select {
				case <-responses:
					answered.Add(1)
				case <-closed:
					c.Close()
					c = nil
				case <-timer.C:
					timeouts.Add(1)
					c.Close()
					c = nil
				}
				if !timer.Stop() {
					select {
					case <-timer.C:
					default:
					}
				}
			}
			if c != nil {
				c.Close()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if !p.Running() {
		t.Fatalf("broker died after %d frames", sent.Load())
	}
	// A real round trip on a fresh client.
	ctx := testenv.Context(t, 2*time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ConsumeTopics("after-fuzz"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 10 {
		r := &kgo.Record{Topic: "after-fuzz", Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprint("v", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce after fuzzing: %v", err)
		}
	}
	var got []string
	for len(got) < 10 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume after fuzzing: %v (got %q)", ctx.Err(), got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)+"="+string(r.Value)) })
	}
	for i, g := range got {
		if want := fmt.Sprintf("%d=v%d", i, i); g != want {
			t.Fatalf("record %d after fuzzing: %q, want %q", i, g, want)
		}
	}
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopicsWithInternal(ctx)
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	partitions := 0
	for _, td := range topics {
		partitions += len(td.Partitions)
	}
	fds := procFDs(t, p.Pid())
	// Lines per event (a topic created) are bounded by what happened;
	// errors and warnings by the rate limit.
	lines := len(regexp.MustCompile(`level=(WARN|ERROR)`).FindAllStringIndex(p.Output(), -1))
	t.Logf("%d mutated frames (%d answered, %d unanswered in 20 ms) on %d connections in %v (%.0f frames/s); broker after: RSS %s, %d descriptors (%d before), %d topics of %d partitions, %d warning/error lines",
		sent.Load(), answered.Load(), timeouts.Load(), conns.Load(), elapsed.Round(time.Millisecond), float64(sent.Load())/elapsed.Seconds(),
		procStatus(t, p.Pid(), "VmRSS"), fds, fdsBefore, len(topics), partitions, lines)
	// At most one cached file per partition plus a few connections.
	if limit := fdsBefore + partitions + 16; fds > limit {
		t.Errorf("%d descriptors open after fuzzing (%d before, %d partitions)", fds, fdsBefore, partitions)
	}
	// Rate-limited: a handful of kinds, one line a second each at most.
	if max := 100 + 10*int(elapsed.Seconds()); lines > max {
		t.Errorf("%d warnings and errors logged in %v: repeated errors are not rate limited", lines, elapsed)
	}
}
