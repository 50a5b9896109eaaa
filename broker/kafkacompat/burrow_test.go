package kafkacompat

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/client"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testkit/kafkatest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// burrowOffsetsTimeout bounds the wait for Burrow to learn the topic's end
// offsets from the brokers: it asks every second (offset-refresh=1), so
// this is dozens of tries.
const burrowOffsetsTimeout = 30 * time.Second

// TestBurrowZooKeeperGroupLag runs Burrow 1.2.1 on a ZooKeeper consumer group
// of client's GroupConsumer and checks the lag it reports, per partition,
// against end offset minus committed offset.
func TestBurrowZooKeeperGroupLag(t *testing.T) {
	t.Parallel()
	burrowBin := testenv.Burrow(t)
	c := startCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const topic, group = "compat-burrow", "compat-burrow-group"
	counts := []int64{30, 20, 10}
	_, end := produceCounts(t, ctx, c, topic, counts)

	// The group commits once before Burrow starts, so that the registry
	// Burrow 1.2.1 walks once at start (/consumers/<group>/offsets/<topic>/<p>)
	// exists, and again once Burrow knows the end offsets: it drops consumer
	// offsets of partitions whose end offsets it has not seen yet.
	g := joinGroup(t, ctx, c, group, topic, len(counts))
	g.commitAt(t, ctx, map[int32]int64{0: 1, 1: 1, 2: 1})

	b := startBurrow(t, burrowBin, c, false)
	b.awaitTopicOffsets(t, ctx, c, topic, counts)

	committed := map[int32]int64{0: 12, 1: 20, 2: 3}
	g.commitAt(t, ctx, committed)
	checkRegistry(t, ctx, c, group, topic, committed)

	b.checkLag(t, ctx, group, topic, end, committed)
}

// groupMember is a client.GroupConsumer in ManualMark mode: it commits
// exactly the offsets the test marks, once the messages before them have
// been delivered.
type groupMember struct {
	g     *client.GroupConsumer
	topic string

	mu        sync.Mutex
	delivered map[int32]int64 // highest offset delivered per partition
}

func joinGroup(t *testing.T, ctx context.Context, c *cluster, group, topic string, partitions int) *groupMember {
	t.Helper()
	g, err := client.NewGroupConsumer(ctx, client.GroupConfig{
		GroupID:           group,
		ZooKeeperConnect:  c.Connect(),
		AutoOffsetReset:   "smallest",
		DisableAutoCommit: true,
		ManualMark:        true,
		RebalanceBackoff:  2 * time.Second,
	})
	if err != nil {
		t.Fatalf("group consumer: %v", err)
	}
	streams, err := g.CreateMessageStreams(ctx, topic, 1)
	if err != nil {
		g.Close(context.Background())
		t.Fatalf("joining group %s: %v", group, err)
	}
	m := &groupMember{g: g, topic: topic, delivered: map[int32]int64{}}
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg, err := range streams[0].All(sctx) {
			if err != nil {
				continue // a failed rebalance is retried; the waits below are bounded
			}
			m.mu.Lock()
			m.delivered[msg.Partition] = max(m.delivered[msg.Partition], msg.Offset)
			m.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		stop()
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := g.Close(cctx); err != nil {
			t.Errorf("closing group consumer: %v", err)
		}
		<-done
	})
	testenv.WaitFor(t, waitTimeout, "group member owning every partition of "+topic, func() (bool, string) {
		return len(g.Owned()[topic]) == partitions, ""
	})
	return m
}

// commitAt waits until the messages before each target have been delivered,
// marks them handled and commits.
func (m *groupMember) commitAt(t *testing.T, ctx context.Context, targets map[int32]int64) {
	t.Helper()
	testenv.WaitFor(t, waitTimeout, fmt.Sprintf("delivery of %s up to %v", m.topic, targets), func() (bool, string) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for p, off := range targets {
			if d, ok := m.delivered[p]; !ok || d < off-1 {
				return false, ""
			}
		}
		return true, ""
	})
	for p, off := range targets {
		m.g.MarkHandled(m.topic, p, off)
	}
	if err := m.g.CommitOffsets(ctx); err != nil {
		t.Fatalf("commit %v: %v", targets, err)
	}
}

// checkRegistry reads /consumers/<group>/offsets/<topic>/<p> as Burrow does.
func checkRegistry(t *testing.T, ctx context.Context, c *cluster, group, topic string, want map[int32]int64) {
	t.Helper()
	s, err := zkcoord.Connect(ctx, c.Connect(), zkcoord.Config{SessionTimeout: 10 * time.Second, ConnectionTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("zookeeper: %v", err)
	}
	defer s.Close()
	for p, off := range want {
		path := fmt.Sprintf("/consumers/%s/offsets/%s/%d", group, topic, p)
		data, _, err := s.Get(ctx, path)
		if err != nil || string(data) != strconv.FormatInt(off, 10) {
			t.Fatalf("%s holds %q (%v); the group committed %d", path, data, err, off)
		}
	}
}

// burrow is a running Burrow process.
type burrow struct {
	addr   string
	output *testproc.SyncBuffer
}

// startBurrow writes a configuration (our brokers as cluster "tributary",
// the ZooKeeper consumer module on the cluster's chroot, with kafkaOffsets
// also the Kafka consumer module on __consumer_offsets, Burrow's own state
// under <chroot>/burrow, an HTTP port of its own) and starts Burrow; it is
// stopped when t ends.
func startBurrow(t *testing.T, bin string, c *cluster, kafkaOffsets bool) *burrow {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	quote := func(list []string) string {
		q := make([]string, len(list))
		for i, s := range list {
			q[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	// Burrow's Kafka consumer module reads __consumer_offsets, and Burrow
	// stops at start when that topic does not exist yet.
	kafkaModule := ""
	if kafkaOffsets {
		kafkaModule = fmt.Sprintf(`[consumer.kafka]
class-name="kafka"
cluster="tributary"
servers=%s
client-profile="tributary"
offsets-topic="__consumer_offsets"

`, quote(c.Addrs()))
	}
	zk := quote(strings.Split(c.zkServers, ","))
	config := fmt.Sprintf(`[general]
pidfile=%q

[logging]
level="info"

[zookeeper]
servers=%s
timeout=6
root-path=%q

[client-profile.tributary]
client-id="burrow-kafkacompat"
kafka-version="1.0.0"

[cluster.tributary]
class-name="kafka"
servers=%s
client-profile="tributary"
topic-refresh=2
offset-refresh=1

%s[consumer.zk]
class-name="kafka_zk"
cluster="tributary"
servers=%s
zookeeper-path=%q
zookeeper-timeout=6

[httpserver.default]
address="127.0.0.1:%d"

[storage.default]
class-name="inmemory"
workers=4
intervals=10
expire-group=604800
min-distance=1

[evaluator.default]
class-name="caching"
expire-cache=1
`, filepath.Join(dir, "burrow.pid"), zk, c.chroot+"/burrow", quote(c.Addrs()), kafkaModule, zk, c.chroot, port)
	if err := os.WriteFile(filepath.Join(dir, "burrow.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &burrow{addr: fmt.Sprintf("127.0.0.1:%d", port), output: &testproc.SyncBuffer{}}
	cmd := exec.Command(bin, "--config-dir", dir)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = b.output, b.output
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Burrow: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("Burrow's output:\n%s", b.output.String())
		}
	})
	return b
}

// get fetches path from Burrow's HTTP API and decodes its JSON into v.
func (b *burrow) get(ctx context.Context, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return json.Unmarshal(body, v)
}

// errors returns Burrow's distinct error-level log messages (its log is
// one JSON object a line; timestamps make every line distinct).
func (b *burrow) errors() string {
	seen := map[string]int{}
	var order []string
	for _, line := range strings.Split(b.output.String(), "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) != nil || entry["level"] != "error" {
			continue
		}
		delete(entry, "ts")
		key, _ := json.Marshal(entry)
		if seen[string(key)] == 0 {
			order = append(order, string(key))
		}
		seen[string(key)]++
	}
	var out []string
	for _, k := range order {
		out = append(out, fmt.Sprintf("%dx %s", seen[k], k))
	}
	if len(out) == 0 {
		return "(none)"
	}
	return strings.Join(out, "\n")
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// awaitTopicOffsets waits until Burrow shows want as topic's end offsets,
// which it learns from the brokers (ListOffsets) every offset-refresh.
func (b *burrow) awaitTopicOffsets(t *testing.T, ctx context.Context, c *cluster, topic string, want []int64) {
	t.Helper()
	var offsets []int64
	deadline := time.Now().Add(burrowOffsetsTimeout)
	for {
		var resp struct {
			Offsets []int64 `json:"offsets"`
		}
		if err := b.get(ctx, "/v3/kafka/tributary/topic/"+topic, &resp); err == nil {
			offsets = resp.Offsets
			if slices.Equal(offsets, want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Burrow did not learn %s's end offsets %v from the brokers within %v (it shows %v).\n"+
				"Burrow's errors:\n%s\nthe brokers on ListOffsets:\n%s",
				topic, want, burrowOffsetsTimeout, offsets, b.errors(), c.brokerLines("ListOffsets"))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// checkLag waits until Burrow's lag report of group shows the committed
// offsets of every partition of topic, and checks that each partition's
// lag is its end offset minus its committed offset.
func (b *burrow) checkLag(t *testing.T, ctx context.Context, group, topic string, end, committed map[int32]int64) {
	t.Helper()
	type partitionLag struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		End       *struct {
			Offset int64 `json:"offset"`
		} `json:"end"`
		CurrentLag int64 `json:"current_lag"`
	}
	var last string
	deadline := time.Now().Add(waitTimeout)
	for {
		var resp struct {
			Status struct {
				Partitions []partitionLag `json:"partitions"`
			} `json:"status"`
		}
		err := b.get(ctx, "/v3/kafka/tributary/consumer/"+group+"/lag", &resp)
		last = fmt.Sprintf("err %v, response %+v", err, resp)
		seen := map[int32]partitionLag{}
		for _, pl := range resp.Status.Partitions {
			if pl.Topic == topic && pl.End != nil && pl.End.Offset == committed[pl.Partition] {
				seen[pl.Partition] = pl
			}
		}
		if len(seen) == len(committed) {
			for p, off := range committed {
				want := end[p] - off
				if got := seen[p].CurrentLag; got != want {
					t.Errorf("Burrow: %s-%d lag %d, want end %d - committed %d = %d", topic, p, got, end[p], off, want)
				} else {
					t.Logf("Burrow: %s-%d lag %d = end %d - committed %d", topic, p, got, end[p], off)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Burrow did not report the committed offsets %v of group %s within %v; last: %s\nBurrow's errors:\n%s",
				committed, group, waitTimeout, last, b.errors())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// produceCounts creates topic with a partition per count and produces that
// many records to each; it returns a client on the cluster and the end
// offsets, checked against the counts.
func produceCounts(t *testing.T, ctx context.Context, c *cluster, topic string, counts []int64) (*kgo.Client, map[int32]int64) {
	t.Helper()
	kafkatest.CreateTopic(t, c.Addrs(), topic, int32(len(counts)), nil)
	cl := c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p, n := range counts {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(fmt.Sprintf("%s-%d-%d", topic, p, i))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	end := endOffsets(t, ctx, cl, topic)
	for p, n := range counts {
		if end[int32(p)] != n {
			t.Fatalf("end offsets %v after producing %v", end, counts)
		}
	}
	return cl, end
}
