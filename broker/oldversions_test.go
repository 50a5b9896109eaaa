package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// sentRequest is the header of one request a client sent.
type sentRequest struct {
	key, version int16
	clientID     string
}

func (s sentRequest) String() string {
	return fmt.Sprintf("%s v%d", kmsg.NameForKey(s.key), s.version)
}

// frameRecorder is a TCP proxy in front of a broker that records the
// header of every request passing through, so that a test can state which
// versions a third-party client really sends. The broker must advertise
// the recorder's address, or the client goes around it after bootstrap.
type frameRecorder struct {
	ln     net.Listener
	target string

	mu   sync.Mutex
	sent []sentRequest
}

func newFrameRecorder(t testing.TB) *frameRecorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &frameRecorder{ln: ln}
	t.Cleanup(func() { ln.Close() })
	return r
}

func (r *frameRecorder) Addr() string { return r.ln.Addr().String() }

// start forwards connections to target until the test ends.
func (r *frameRecorder) start(t testing.TB, target string) {
	r.target = target
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(func() { r.ln.Close() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := r.ln.Accept()
			if err != nil {
				return
			}
			up, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(c, up); c.Close() }()
			go func() { defer wg.Done(); r.forward(c, up); up.Close() }()
		}
	}()
}

// forward copies frames from client to broker, recording their headers.
func (r *frameRecorder) forward(c, up net.Conn) {
	var size [4]byte
	for {
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		rd := kbin.Reader{Src: frame}
		s := sentRequest{key: rd.Int16(), version: rd.Int16()}
		rd.Int32()
		if id := rd.NullableString(); id != nil {
			s.clientID = *id
		}
		r.mu.Lock()
		r.sent = append(r.sent, s)
		r.mu.Unlock()
		if _, err := up.Write(append(size[:], frame...)); err != nil && !errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// versions returns the distinct requests sent since the last call.
func (r *frameRecorder) take() []sentRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[sentRequest]bool{}
	var out []sentRequest
	for _, s := range r.sent {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	r.sent = nil
	return out
}

// TestListOffsetsV0 checks Kafka's legacy answer: segment base offsets by
// the modification time of their files, and the end offset, newest first.
func TestListOffsetsV0(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) { c.SegmentBytes = 100 }) // a segment per batch
	ctx := testenv.Context(t, time.Minute)
	for _, topic := range []string{"lo0", "lo0-empty"} {
		if err := b.CreateTopic(ctx, topic, 1); err != nil {
			t.Fatal(err)
		}
	}
	c := dialRaw(t, b.Addr())
	var end int64
	for i := range 4 {
		resp := c.roundTrip(produceRequest(3, -1, "lo0", 0, makeBatch(int64(1000*i), -1, -1, -1, "a", "b", "c"))).(*kmsg.ProduceResponse)
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != end {
			t.Fatalf("produce %d: %+v", i, p)
		}
		end += 3
	}
	// Give each segment file its own age, a second apart from t0.
	p := b.partitions.Leader("lo0", 0)
	bases := segmentBases(t, p.Dir())
	if len(bases) != 4 || bases[0] != 0 || bases[3] != 9 {
		t.Fatalf("segments %v, want one per batch: 0 3 6 9", bases)
	}
	const t0 = int64(1_000_000_000_000)
	for i, base := range bases {
		mt := time.UnixMilli(t0 + int64(i)*1000)
		if err := os.Chtimes(filepath.Join(p.Dir(), fmt.Sprintf("%020d.log", base)), mt, mt); err != nil {
			t.Fatal(err)
		}
	}

	list := func(topic string, partition int32, ts int64, maxNum int32) (int16, []int64) {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(0)
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.MaxNumOffsets = partition, ts, maxNum
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := c.roundTrip(req).(*kmsg.ListOffsetsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Topic != topic || len(resp.Topics[0].Partitions) != 1 ||
			resp.Topics[0].Partitions[0].Partition != partition {
			t.Fatalf("ListOffsets v0 response %+v", resp.Topics)
		}
		sp := resp.Topics[0].Partitions[0]
		return sp.ErrorCode, sp.OldStyleOffsets
	}
	future := time.Now().Add(time.Hour).UnixMilli()
	for _, tc := range []struct {
		ts     int64
		maxNum int32
		want   []int64
	}{
		{-1, 1, []int64{12}},
		{-1, 3, []int64{12, 9, 6}},
		{-1, 100, []int64{12, 9, 6, 3, 0}},
		{-2, 1, []int64{0}},
		{-2, 100, []int64{0}},
		{t0 - 1, 10, []int64{}},        // older than every segment
		{t0, 10, []int64{0}},           // modified at, not only before
		{t0 + 1500, 10, []int64{3, 0}}, // between the second and third
		{t0 + 3000, 2, []int64{9, 6}},  // the last segment, two offsets
		{future, 10, []int64{12, 9, 6, 3, 0}},
		{-1, 0, []int64{}},
		{-3, 10, []int64{}}, // Kafka treats other negative times as times
	} {
		code, got := list("lo0", 0, tc.ts, tc.maxNum)
		if code != 0 || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("ts %d max %d: error %d offsets %v, want %v", tc.ts, tc.maxNum, code, got, tc.want)
		}
	}
	if code, got := list("lo0", 0, -1, -1); code != kerr.UnknownServerError.Code || len(got) != 0 {
		t.Errorf("negative max_num_offsets: error %d offsets %v, want UNKNOWN_SERVER_ERROR as Kafka", code, got)
	}
	// An empty log: its one segment has no data, so no end offset entry.
	for _, ts := range []int64{-1, -2} {
		if code, got := list("lo0-empty", 0, ts, 5); code != 0 || fmt.Sprint(got) != "[0]" {
			t.Errorf("empty log ts %d: error %d offsets %v, want [0]", ts, code, got)
		}
	}
	if code, _ := list("lo0", 7, -1, 1); code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown partition: error %d", code)
	}
	if code, _ := list("no-such-topic", 0, -1, 1); code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: error %d", code)
	}
}

func segmentBases(t *testing.T, dir string) []int64 {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var out []int64
	for _, n := range names {
		var base int64
		if _, err := fmt.Sscanf(filepath.Base(n), "%020d.log", &base); err != nil {
			t.Fatalf("segment name %s: %v", n, err)
		}
		out = append(out, base)
	}
	return out
}

// TestUnsupportedVersionLoggedOncePerVersion: a refused version closes
// the connection and is logged with the API, version and client id, once
// a second per API and version however often it comes.
func TestUnsupportedVersionLoggedOncePerVersion(t *testing.T) {
	var logs testproc.SyncBuffer
	cfg := config.Config{Listeners: "PLAINTEXT://127.0.0.1:0", LogDirs: []string{t.TempDir()}, RetentionCheckInterval: time.Hour}
	b, err := New(cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(testenv.Context(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })

	send := func(req kmsg.Request, clientID string) {
		t.Helper()
		c := dialRaw(t, b.Addr())
		f := kmsg.RequestFormatter{}
		if clientID != "" {
			f = *kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
		}
		c.writeRaw(f.AppendRequest(nil, req, 1))
		c.expectClosed()
	}
	fetch1 := fetchRequest(1, "x", 0, 0, 0, 1)
	produce2 := produceRequest(2, 1, "x", 0, nil)
	start := time.Now()
	for range 5 {
		send(fetch1, "old-consumer")
	}
	send(produce2, "old-producer")
	lines := func(sub string) []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, sub) {
				out = append(out, l)
			}
		}
		return out
	}
	sends := 5
	fetchLines := lines("api=Fetch")
	if len(fetchLines) == 0 || (time.Since(start) < time.Second && len(fetchLines) != 1) {
		t.Fatalf("%d lines for Fetch v1 within a second, want 1:\n%s", len(fetchLines), logs.String())
	}
	for _, want := range []string{"refusing an unsupported request version", "version=1", "supported=v4-v12", "client_id=old-consumer"} {
		if !strings.Contains(fetchLines[0], want) {
			t.Fatalf("log line lacks %q: %s", want, fetchLines[0])
		}
	}
	if p := lines("api=Produce"); len(p) != 1 || !strings.Contains(p[0], "version=2") || !strings.Contains(p[0], "client_id=old-producer") {
		t.Fatalf("Produce v2 lines %q", p)
	}
	// Once the interval has passed, the next one is logged with the count
	// of those it stood for: every refusal is accounted for.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		before := len(lines("api=Fetch"))
		send(fetch1, "old-consumer")
		sends++
		if after := len(lines("api=Fetch")); after > before && after >= 2 {
			break // this send was logged: none is pending
		}
	}
	fetchLines = lines("api=Fetch")
	total := len(fetchLines)
	for _, l := range fetchLines {
		var n int
		if i := strings.Index(l, "repeated="); i >= 0 {
			fmt.Sscanf(l[i:], "repeated=%d", &n)
		}
		total += n
	}
	if len(fetchLines) < 2 || total != sends {
		t.Fatalf("%d Fetch lines standing for %d refusals, want %d:\n%s", len(fetchLines), total, sends, strings.Join(fetchLines, "\n"))
	}
}

// TestKcatOldProtocolVersions runs kcat with api.version.request=false, so
// that librdkafka picks request versions from broker.version.fallback
// without asking, through a recorder that states what it really sent.
func TestKcatOldProtocolVersions(t *testing.T) {
	testenv.Kcat(t)
	rec := newFrameRecorder(t)
	b := newTestBroker(t, func(c *config.Config) { c.AdvertisedListeners = "PLAINTEXT://" + rec.Addr() })
	rec.start(t, b.Addr())
	if err := b.CreateTopic(testenv.Context(t, time.Minute), "ov", 2); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, b.Addr())
	resp := c.roundTrip(produceRequest(3, -1, "ov", 1, makeBatch(1000, -1, -1, -1, "a", "b", "c", "d", "e"))).(*kmsg.ProduceResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 {
		t.Fatalf("produce: %+v", p)
	}
	rec.take()

	for _, tc := range []struct {
		fallback string
		// what this librdkafka sends for -L and for -Q
		list, query string
	}{
		// 0.10.0 and later make librdkafka ask ApiVersions all the same.
		{"0.10.0", "[ApiVersions v3 Metadata v4]", "[ApiVersions v3 Metadata v4 ListOffsets v2]"},
		{"0.9.0", "[Metadata v0]", "[Metadata v0 ListOffsets v0]"},
		{"0.8.2", "[Metadata v0]", "[Metadata v0 ListOffsets v0]"},
	} {
		x := []string{"-b", rec.Addr(), "-X", "api.version.request=false", "-X", "broker.version.fallback=" + tc.fallback}
		md := runKcat(t, "", append(x, "-L", "-t", "ov")...)
		if sent := fmt.Sprint(rec.take()); sent != tc.list {
			t.Errorf("fallback %s: kcat -L sent %s, want %s", tc.fallback, sent, tc.list)
		}
		for _, re := range []string{`(?m)^  topic "ov" with 2 partitions:$`, `(?m)^    partition 1, leader 0, replicas: 0, isrs: 0$`} {
			if !regexp.MustCompile(re).MatchString(md) {
				t.Fatalf("fallback %s: kcat -L output lacks %s:\n%s", tc.fallback, re, md)
			}
		}
		future := time.Now().Add(time.Hour).UnixMilli()
		for _, q := range []struct {
			spec, want string
		}{
			{"ov:1:-1", "ov [1] offset 5"},
			{"ov:1:-2", "ov [1] offset 0"},
			{"ov:0:-1", "ov [0] offset 0"},
			// By time, v1+ answers the first record at or after it (none);
			// v0 the newest segment or end offset written before it.
			{fmt.Sprintf("ov:1:%d", future), map[bool]string{true: "ov [1] offset -1", false: "ov [1] offset 5"}[tc.fallback == "0.10.0"]},
		} {
			out := runKcat(t, "", append(x, "-Q", "-t", q.spec)...)
			if strings.TrimSpace(out) != q.want {
				t.Errorf("fallback %s: kcat -Q -t %s printed %q, want %q", tc.fallback, q.spec, out, q.want)
			}
			if sent := fmt.Sprint(rec.take()); sent != tc.query {
				t.Errorf("fallback %s: kcat -Q sent %s, want %s", tc.fallback, sent, tc.query)
			}
		}
	}
}
