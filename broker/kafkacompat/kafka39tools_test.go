package kafkacompat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/kafkatest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestKafka39AdminTools runs Apache Kafka 3.9's admin tools, which speak
// only the Kafka protocol (--bootstrap-server), against three broker
// processes, and checks what they did against what our brokers report.
func TestKafka39AdminTools(t *testing.T) {
	t.Parallel()
	tools := testenv.Kafka39Tools(t)
	// Leadership stays where elections put it: the tool has work to do.
	c := startClusterWith(t, 3, map[string]string{"auto.leader.rebalance.enable": "false"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bootstrap := strings.Join(c.Addrs(), ",")

	t.Run("TopicCommandAlterPartitions", func(t *testing.T) { checkAlterPartitions(t, ctx, tools, c, bootstrap) })
	t.Run("DeleteRecordsCommand", func(t *testing.T) { checkDeleteRecords(t, ctx, tools, c) })
	t.Run("LogDirsCommand", func(t *testing.T) { checkLogDirs(t, ctx, tools, c) })
	t.Run("ReassignPartitionsCommand", func(t *testing.T) { checkReassign(t, ctx, tools, c) })
	// Last: it restarts brokers.
	t.Run("LeaderElectionCommand", func(t *testing.T) { checkLeaderElection(t, ctx, tools, c) })
}

// checkDeleteRecords: kafka-delete-records --offset-json-file moves the
// log start offset; ListOffsets earliest then answers the requested offset
// on every replica (asked as Kafka's debugging replica, -2).
func checkDeleteRecords(t *testing.T, ctx context.Context, tools testenv.KafkaTools, c *cluster) {
	const topic = "compat-delete"
	adm := kadm.NewClient(c.client(t))
	if resp, err := adm.CreateTopic(ctx, 2, 3, map[string]*string{"segment.bytes": kadm.StringPtr("2048")}, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	testenv.WaitFor(t, waitTimeout, topic+" in sync", func() (bool, string) {
		td := c.topicFrom(t, ctx, topic)
		if td.Err != nil || len(td.Partitions) != 2 {
			return false, ""
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || len(p.ISR) != 3 {
				return false, ""
			}
		}
		return true, ""
	})
	produceRounds(t, ctx, c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks())), topic, 2, 10, 10)
	file := filepath.Join(t.TempDir(), "offsets.json")
	if err := os.WriteFile(file, []byte(`{"version":1,"partitions":[`+
		`{"topic":"`+topic+`","partition":0,"offset":37},{"topic":"`+topic+`","partition":1,"offset":-1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, ctx, tools, "org.apache.kafka.tools.DeleteRecordsCommand", "--bootstrap-server", c.live(), "--offset-json-file", file)
	t.Logf("kafka-delete-records:\n%s", out)
	for _, want := range []string{"partition: " + topic + "-0\tlow_watermark: 37", "partition: " + topic + "-1\tlow_watermark: 100"} {
		if !strings.Contains(out, want) {
			t.Fatalf("kafka-delete-records printed\n%s\nwant a line %q", out, want)
		}
	}
	want := map[int32]int64{0: 37, 1: 100}
	td := c.topicFrom(t, ctx, topic)
	testenv.WaitFor(t, waitTimeout, "ListOffsets earliest on every replica", func() (bool, string) {
		for p, d := range td.Partitions {
			for _, id := range d.Replicas {
				if earliestOn(ctx, c.Addr(id), id, topic, p) != want[p] {
					return false, ""
				}
			}
		}
		return true, ""
	})
	// Past the high watermark: refused, nothing moves.
	if err := os.WriteFile(file, []byte(`{"version":1,"partitions":[{"topic":"`+topic+`","partition":0,"offset":101}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _, _ := runTool(t, ctx, tools, "", "org.apache.kafka.tools.DeleteRecordsCommand", "--bootstrap-server", c.live(), "--offset-json-file", file)
	if !strings.Contains(stdout, "OffsetOutOfRangeException") {
		t.Fatalf("past the high watermark, kafka-delete-records printed\n%s", stdout)
	}
	if got := earliestOn(ctx, c.Addr(td.Partitions[0].Leader), td.Partitions[0].Leader, topic, 0); got != 37 {
		t.Fatalf("after the refused request: log start %d, want 37", got)
	}
}

// earliestOn is partition p's log start offset as broker id (at addr)
// answers ListOffsets earliest from Kafka's debugging replica id; -1 on
// error.
func earliestOn(ctx context.Context, addr string, id int32, topic string, p int32) int64 {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return -1
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -2
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = p, -2
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		return -1
	}
	sp := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		return -1
	}
	return sp.Offset
}

// live is the bootstrap list of the running brokers.
func (c *cluster) live() string { return strings.Join(c.Addrs(), ",") }

// topicFrom returns the topic as a live broker describes it.
func (c *cluster) topicFrom(t *testing.T, ctx context.Context, topic string) kadm.TopicDetail {
	t.Helper()
	for _, a := range c.Addrs() {
		md, err := kafkatest.MetadataFrom(ctx, a, topic)
		if err == nil {
			return md.Topics[topic]
		}
	}
	t.Fatalf("no live broker answers metadata")
	return kadm.TopicDetail{}
}

// checkLeaderElection: kafka-leader-election --election-type PREFERRED
// --all-topic-partitions gives back leadership to a restarted broker, and
// --election-type UNCLEAN elects the live out-of-sync replica of an
// offline partition.
func checkLeaderElection(t *testing.T, ctx context.Context, tools testenv.KafkaTools, c *cluster) {
	const class = "org.apache.kafka.tools.LeaderElectionCommand"
	adm := kadm.NewClient(c.client(t))
	if resp, err := adm.CreateTopic(ctx, 6, 3, nil, "compat-elect"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	inSync := func(td kadm.TopicDetail, n int) bool {
		if td.Err != nil || len(td.Partitions) == 0 {
			return false
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || len(p.ISR) != n {
				return false
			}
		}
		return true
	}
	testenv.WaitFor(t, waitTimeout, "compat-elect in sync", func() (bool, string) { return inSync(c.topicFrom(t, ctx, "compat-elect"), 3), "" })
	c.Stop(t, 1)
	c.Start(t, 1)
	var td kadm.TopicDetail
	testenv.WaitFor(t, waitTimeout, "compat-elect in sync after broker 1's restart", func() (bool, string) {
		td = c.topicFrom(t, ctx, "compat-elect")
		return inSync(td, 3), ""
	})
	// --all-topic-partitions covers every topic: all must be in sync again,
	// or the preferred replica may not be electable yet.
	testenv.WaitFor(t, waitTimeout, "every topic in sync after broker 1's restart", func() (bool, string) {
		md, err := kafkatest.MetadataFrom(ctx, c.Addr(1))
		if err != nil {
			return false, ""
		}
		for _, d := range md.Topics {
			for _, p := range d.Partitions {
				if len(p.ISR) != len(p.Replicas) {
					return false, ""
				}
			}
		}
		return true, ""
	})
	moved := 0
	for _, p := range td.Partitions {
		if p.Replicas[0] != p.Leader {
			moved++
		}
	}
	if moved == 0 {
		t.Fatalf("no partition lost its preferred leader to the restart: %+v", td.Partitions)
	}
	out := mustRun(t, ctx, tools, class, "--bootstrap-server", c.live(), "--election-type", "PREFERRED", "--all-topic-partitions")
	t.Logf("kafka-leader-election PREFERRED:\n%s", out)
	if !strings.Contains(out, "Successfully completed leader election (PREFERRED) for partitions") {
		t.Fatalf("preferred election printed:\n%s", out)
	}
	testenv.WaitFor(t, waitTimeout, "preferred leaders back", func() (bool, string) {
		for _, p := range c.topicFrom(t, ctx, "compat-elect").Partitions {
			if p.Leader != p.Replicas[0] {
				return false, ""
			}
		}
		return true, ""
	})

	// Offline: replicas [x y]; y stops (leaves the ISR), records come, x
	// stops, y returns out of sync.
	if resp, err := adm.CreateTopic(ctx, 1, 2, nil, "compat-unclean"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	testenv.WaitFor(t, waitTimeout, "compat-unclean in sync", func() (bool, string) { td = c.topicFrom(t, ctx, "compat-unclean"); return inSync(td, 2), "" })
	x, y := td.Partitions[0].Replicas[0], td.Partitions[0].Replicas[1]
	c.Stop(t, y)
	testenv.WaitFor(t, waitTimeout, "compat-unclean ISR without broker y", func() (bool, string) {
		p := c.topicFrom(t, ctx, "compat-unclean").Partitions[0]
		return p.Leader == x && len(p.ISR) == 1, ""
	})
	c.Stop(t, x)
	c.Start(t, y)
	testenv.WaitFor(t, waitTimeout, "compat-unclean offline", func() (bool, string) {
		p := c.topicFrom(t, ctx, "compat-unclean").Partitions[0]
		return p.Leader == -1, ""
	})
	out = mustRun(t, ctx, tools, class, "--bootstrap-server", c.live(), "--election-type", "UNCLEAN",
		"--topic", "compat-unclean", "--partition", "0")
	t.Logf("kafka-leader-election UNCLEAN:\n%s", out)
	if !strings.Contains(out, "Successfully completed leader election (UNCLEAN) for partitions compat-unclean-0") {
		t.Fatalf("unclean election printed:\n%s", out)
	}
	testenv.WaitFor(t, waitTimeout, "broker y leading compat-unclean", func() (bool, string) {
		p := c.topicFrom(t, ctx, "compat-unclean").Partitions[0]
		return p.Leader == y, ""
	})
	c.Start(t, x)
}

// describeLine matches one partition line of kafka-topics --describe.
var describeLine = regexp.MustCompile(`Topic: (\S+)\s+Partition: (\d+)\s+Leader: (-?\d+|none)\s+Replicas: ([\d,]+)\s+Isr: ([\d,]*)`)

// checkAlterPartitions: kafka-topics --alter --partitions 12 on a
// 6-partition topic; describe then shows 12 partitions, each led, and the
// new ones take records.
func checkAlterPartitions(t *testing.T, ctx context.Context, tools testenv.KafkaTools, c *cluster, bootstrap string) {
	const class = "org.apache.kafka.tools.TopicCommand"
	const topic = "compat-grow"
	mustRun(t, ctx, tools, class, "--bootstrap-server", bootstrap, "--create", "--topic", topic,
		"--partitions", "6", "--replication-factor", "2")
	mustRun(t, ctx, tools, class, "--bootstrap-server", bootstrap, "--alter", "--topic", topic, "--partitions", "12")
	var out string
	testenv.WaitFor(t, waitTimeout, "12 led partitions in kafka-topics --describe", func() (bool, string) {
		out = mustRun(t, ctx, tools, class, "--bootstrap-server", bootstrap, "--describe", "--topic", topic)
		lines := describeLine.FindAllStringSubmatch(out, -1)
		if len(lines) != 12 || !strings.Contains(out, "PartitionCount: 12") {
			return false, ""
		}
		for _, l := range lines {
			if l[3] == "none" || l[3] == "-1" || len(strings.Split(l[4], ",")) != 2 {
				return false, ""
			}
		}
		return true, ""
	})
	t.Logf("kafka-topics --describe after --alter:\n%s", out)
	// Shrinking is refused with Kafka's message.
	_, stderr, err := runTool(t, ctx, tools, "", class, "--bootstrap-server", bootstrap, "--alter", "--topic", topic, "--partitions", "3")
	if err == nil || !strings.Contains(stderr, "InvalidPartitionsException") {
		t.Fatalf("--alter --partitions 3: %v\n%s", err, stderr)
	}
	cl := c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(6); p < 12; p++ {
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprint("new-", p))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce to new partition %d: %v", p, err)
		}
		if r.Offset != 0 {
			t.Fatalf("first record of new partition %d at offset %d", p, r.Offset)
		}
	}
}

// checkLogDirs: kafka-log-dirs --describe lists every replica of a topic
// under its broker's log dir, each with the size of its segment files.
func checkLogDirs(t *testing.T, ctx context.Context, tools testenv.KafkaTools, c *cluster) {
	const topic = "compat-logdirs"
	adm := kadm.NewClient(c.client(t))
	if resp, err := adm.CreateTopic(ctx, 3, 2, map[string]*string{"segment.bytes": kadm.StringPtr("4096")}, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	produceRounds(t, ctx, c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks())), topic, 3, 10, 5)
	td := c.topicFrom(t, ctx, topic)
	// Followers fetch asynchronously: wait until every replica has the
	// leader's bytes before comparing with the tool's.
	var out string
	var report logDirsReport
	testenv.WaitFor(t, waitTimeout, "kafka-log-dirs sizes equal to the files on every replica", func() (bool, string) {
		out = mustRun(t, ctx, tools, "org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server", c.live(),
			"--describe", "--topic-list", topic)
		_, js, ok := strings.Cut(out, "\n{")
		if !ok {
			t.Fatalf("kafka-log-dirs printed no JSON:\n%s", out)
		}
		report = logDirsReport{}
		if err := json.Unmarshal([]byte("{"+js), &report); err != nil {
			t.Fatalf("kafka-log-dirs JSON: %v\n%s", err, out)
		}
		seen := 0
		for _, br := range report.Brokers {
			for _, ld := range br.LogDirs {
				if ld.LogDir != c.LogDir(br.Broker) || ld.Error != nil {
					t.Fatalf("broker %d: log dir %q error %v, want %q", br.Broker, ld.LogDir, ld.Error, c.LogDir(br.Broker))
				}
				for _, p := range ld.Partitions {
					if p.Size != segmentBytes(t, filepath.Join(ld.LogDir, p.Partition)) || p.Size == 0 {
						return false, ""
					}
					seen++
				}
			}
		}
		return seen == 3*2, ""
	})
	for p, d := range td.Partitions {
		for _, id := range d.Replicas {
			if !report.has(id, fmt.Sprintf("%s-%d", topic, p)) {
				t.Fatalf("kafka-log-dirs does not list %s-%d on broker %d:\n%s", topic, p, id, out)
			}
		}
	}
	t.Logf("kafka-log-dirs --describe:\n%s", out)
}

// logDirsReport is the JSON kafka-log-dirs --describe prints.
type logDirsReport struct {
	Brokers []struct {
		Broker  int32 `json:"broker"`
		LogDirs []struct {
			LogDir     string  `json:"logDir"`
			Error      *string `json:"error"`
			Partitions []struct {
				Partition string `json:"partition"`
				Size      int64  `json:"size"`
				OffsetLag int64  `json:"offsetLag"`
				IsFuture  bool   `json:"isFuture"`
			} `json:"partitions"`
		} `json:"logDirs"`
	} `json:"brokers"`
}

func (r logDirsReport) has(broker int32, partition string) bool {
	for _, br := range r.Brokers {
		for _, ld := range br.LogDirs {
			for _, p := range ld.Partitions {
				if br.Broker == broker && p.Partition == partition {
					return true
				}
			}
		}
	}
	return false
}

// segmentBytes sums the sizes of a partition directory's .log files.
func segmentBytes(t *testing.T, dir string) int64 {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil {
			n += st.Size()
		}
	}
	return n
}

// checkReassign: kafka-reassign-partitions --generate, --execute
// --throttle 10000000 and --verify move every replica of a topic off
// broker 2 of 3 while a producer with acks=all writes to it. The new
// replicas copy the preloaded bytes no faster than the throttle allows
// (measured on their files), --verify removes the throttle configs the
// tool set, every acknowledged record is there afterwards and broker 2
// keeps no directory of the topic.
func checkReassign(t *testing.T, ctx context.Context, tools testenv.KafkaTools, c *cluster) {
	const class = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
	const topic = "compat-reassign"
	// 12 MB a partition: each new replica's broker copies about 24 MB, a
	// few seconds at the throttle, well under one unthrottled.
	const throttle, preloadPerPartition, preloadSize = 10_000_000, 120, 100 << 10
	adm := kadm.NewClient(c.client(t))
	if resp, err := adm.CreateTopic(ctx, 6, 2, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	testenv.WaitFor(t, waitTimeout, topic+" led", func() (bool, string) {
		td := c.topicFrom(t, ctx, topic)
		return td.Err == nil && len(td.Partitions) == 6 && td.Partitions[0].Leader >= 0, ""
	})
	if n := topicDirCount(t, c.LogDir(2), topic); n == 0 {
		t.Fatalf("broker 2 holds no replica of %s", topic)
	}
	acked := map[string][]byte{}
	pre := c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := 0; i < preloadPerPartition; i++ {
		var batch []*kgo.Record
		for p := int32(0); p < 6; p++ {
			key := fmt.Sprintf("pre-%d-%d", p, i)
			acked[key] = preloadValue(key, preloadSize)
			batch = append(batch, &kgo.Record{Topic: topic, Partition: p, Key: []byte(key), Value: acked[key]})
		}
		if err := pre.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			t.Fatalf("preload: %v", err)
		}
	}
	before := c.topicFrom(t, ctx, topic)
	sizes := map[int32]int64{}
	testenv.WaitFor(t, waitTimeout, "every replica holding the preload", func() (bool, string) {
		for p, d := range before.Partitions {
			for _, id := range d.Replicas {
				n := segmentBytes(t, filepath.Join(c.LogDir(id), fmt.Sprintf("%s-%d", topic, p)))
				if id != d.Replicas[0] && n != sizes[p] {
					return false, fmt.Sprintf("%s-%d: %d bytes on broker %d, %d on %d", topic, p, n, id, sizes[p], d.Replicas[0])
				}
				sizes[p] = n
			}
		}
		return true, ""
	})

	dir := t.TempDir()
	move := filepath.Join(dir, "move.json")
	if err := os.WriteFile(move, []byte(`{"version":1,"topics":[{"topic":"`+topic+`"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, ctx, tools, class, "--bootstrap-server", c.live(), "--generate",
		"--topics-to-move-json-file", move, "--broker-list", "1,3")
	_, proposed, ok := strings.Cut(out, "Proposed partition reassignment configuration\n")
	if !ok {
		t.Fatalf("--generate printed\n%s", out)
	}
	proposed = strings.TrimSpace(proposed)
	var planned struct {
		Partitions []struct {
			Partition int32   `json:"partition"`
			Replicas  []int32 `json:"replicas"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(proposed), &planned); err != nil {
		t.Fatalf("--generate's plan: %v\n%s", err, proposed)
	}
	// added lists the new replicas: each copies its partition from 0.
	type replica struct{ broker, partition int32 }
	var added []replica
	receives := map[int32]int64{}
	for _, pp := range planned.Partitions {
		for _, id := range pp.Replicas {
			if !slices.Contains(before.Partitions[pp.Partition].Replicas, id) {
				added = append(added, replica{id, pp.Partition})
				receives[id] += sizes[pp.Partition]
			}
		}
	}
	plan := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(plan, []byte(proposed), 0o644); err != nil {
		t.Fatal(err)
	}

	// Load: acks=all, until stopped; every acknowledged key is kept.
	cl := c.client(t, kgo.RequiredAcks(kgo.AllISRAcks()))
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := fmt.Sprint("r-", i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(key)}).FirstErr(); err != nil {
				t.Errorf("produce %s: %v", key, err)
				return
			}
			mu.Lock()
			acked[key] = []byte(key)
			mu.Unlock()
		}
	}()
	// --execute runs while the test samples the new replicas' files: the
	// copy starts before the tool exits.
	start := time.Now()
	type result struct {
		stdout, stderr string
		err            error
	}
	executed := make(chan result, 1)
	go func() {
		stdout, stderr, err := runTool(t, ctx, tools, "", class, "--bootstrap-server", c.live(), "--execute",
			"--throttle", strconv.Itoa(throttle), "--reassignment-json-file", plan)
		executed <- result{stdout, stderr, err}
	}()
	var execution *result
	// Catch-up measured on the new replicas' files: the first and the
	// last sample that saw them grow.
	type sample struct {
		at    time.Time
		bytes map[int32]int64
	}
	var first, last *sample
	testenv.WaitFor(t, 3*time.Minute, "the reassignment of "+topic+" to finish", func() (bool, string) {
		s := &sample{at: time.Now(), bytes: map[int32]int64{}}
		for _, r := range added {
			s.bytes[r.broker] += segmentBytes(t, filepath.Join(c.LogDir(r.broker), fmt.Sprintf("%s-%d", topic, r.partition)))
		}
		total := int64(0)
		for _, n := range s.bytes {
			total += n
		}
		if first == nil && total > 0 {
			first = s
		}
		if last == nil || total > sumBytes(last.bytes) {
			last = s
		}
		if execution == nil {
			select {
			case r := <-executed:
				execution = &r
				if r.err != nil {
					return true, ""
				}
			default:
				return false, fmt.Sprintf("--execute running, %d bytes copied", total)
			}
		}
		ongoing, err := adm.ListPartitionReassignments(ctx, nil)
		if err != nil {
			return false, err.Error()
		}
		n := 0
		ongoing.Each(func(r kadm.ListPartitionReassignmentsResponse) {
			if r.Topic == topic {
				n++
			}
		})
		if n > 0 {
			return false, fmt.Sprintf("%d partitions moving, %d bytes copied", n, total)
		}
		// The controller may not have taken the reassignment up yet.
		now := c.topicFrom(t, ctx, topic)
		for _, pp := range planned.Partitions {
			d := now.Partitions[pp.Partition]
			if !sameSet(d.Replicas, pp.Replicas) || !sameSet(d.ISR, pp.Replicas) {
				return false, fmt.Sprintf("partition %d: replicas %v ISR %v, planned %v; %d bytes copied", pp.Partition, d.Replicas, d.ISR, pp.Replicas, total)
			}
		}
		return true, ""
	})
	took := time.Since(start)
	if execution.err != nil {
		t.Fatalf("--execute --throttle failed (%s)\nstdout:\n%s\nstderr:\n%s", exitStatus(execution.err), execution.stdout, execution.stderr)
	}
	t.Logf("--execute --throttle %d:\n%s", throttle, execution.stdout)
	// The tool set the rates on the brokers of the move; they stay until
	// --verify.
	for id := int32(1); id <= 3; id++ {
		for _, k := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"} {
			if v, src, err := describeBrokerConfig(ctx, c.Addr(id), id, k); err != nil || v != strconv.Itoa(throttle) || src != kmsg.ConfigSourceDynamicBrokerConfig {
				t.Fatalf("broker %d after --execute --throttle: %s=%s (%v, %v)", id, k, v, src, err)
			}
		}
	}
	if first == nil || last == first {
		t.Fatalf("no sample saw the new replicas grow (first %v, last %v)", first, last)
	}
	window := last.at.Sub(first.at).Seconds()
	for id, want := range receives {
		// The follower bucket starts full: one second of rate may pass at
		// once, the rest at most at the rate.
		floor := time.Duration(float64(want-throttle) / throttle * float64(time.Second))
		grew := last.bytes[id] - first.bytes[id]
		t.Logf("broker %d copied %.1f MB for its new replicas: %.2f MB/s between samples %.1f s apart, all in %v (throttle %.0f MB/s)",
			id, float64(want)/1e6, float64(grew)/1e6/window, window, took.Round(time.Millisecond), float64(throttle)/1e6)
		if took < floor {
			t.Fatalf("broker %d copied %d bytes in %v: faster than a %d B/s throttle allows (at least %v)", id, want, took, throttle, floor)
		}
		if rate := float64(grew-throttle) / window; rate > 1.1*throttle {
			t.Fatalf("broker %d copied at %.0f B/s beyond its first second: over the %d B/s throttle", id, rate, throttle)
		}
	}

	testenv.WaitFor(t, waitTimeout, "--verify reporting every reassignment complete", func() (bool, string) {
		out = mustRun(t, ctx, tools, class, "--bootstrap-server", c.live(), "--verify", "--reassignment-json-file", plan)
		return strings.Count(out, "is completed") == 6, ""
	})
	t.Logf("--verify:\n%s", out)
	close(stop)
	<-done
	// --verify removed what --execute --throttle set.
	for id := int32(1); id <= 3; id++ {
		for _, k := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"} {
			testenv.WaitFor(t, waitTimeout, fmt.Sprintf("broker %d without %s", id, k), func() (bool, string) {
				v, src, err := describeBrokerConfig(ctx, c.Addr(id), id, k)
				return err == nil && src != kmsg.ConfigSourceDynamicBrokerConfig, fmt.Sprintf("%s (%v) %v", v, src, err)
			})
		}
	}
	for _, k := range []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"} {
		if v, src, err := describeTopicConfig(ctx, c.Addr(1), topic, k); err != nil || src == kmsg.ConfigSourceDynamicTopicConfig {
			t.Fatalf("%s after --verify: %s=%q (%v, %v)", topic, k, v, src, err)
		}
	}
	for _, p := range c.topicFrom(t, ctx, topic).Partitions {
		if slices.Contains(p.Replicas, 2) || slices.Contains(p.ISR, 2) || p.Leader == 2 {
			t.Fatalf("partition %d still on broker 2: %+v", p.Partition, p)
		}
	}
	testenv.WaitFor(t, waitTimeout, "broker 2 without directories of "+topic, func() (bool, string) { return topicDirCount(t, c.LogDir(2), topic) == 0, "" })
	// Every acknowledged record is readable, with its value.
	rd := c.client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	mu.Lock()
	defer mu.Unlock()
	missing := maps.Clone(acked)
	for len(missing) > 0 {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d acknowledged records not read back", len(missing), len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want, ok := acked[string(r.Key)]; ok && !bytes.Equal(r.Value, want) {
				t.Fatalf("%s-%d@%d: key %s has a value of %d bytes that is not the one produced", topic, r.Partition, r.Offset, r.Key, len(r.Value))
			}
			delete(missing, string(r.Key))
		})
	}
	t.Logf("%d acknowledged records, all read back after the move", len(acked))
}

// preloadValue is n bytes derived from key, without long runs.
func preloadValue(key string, n int) []byte {
	b := make([]byte, n)
	h := fnv.New64a()
	h.Write([]byte(key))
	x := h.Sum64() | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// sameSet reports whether a and b hold the same brokers.
func sameSet(a, b []int32) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(id int32) bool { return !slices.Contains(b, id) })
}

// sumBytes adds up a sample's bytes.
func sumBytes(m map[int32]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// topicDirCount counts the partition directories of topic in a log dir.
func topicDirCount(t *testing.T, dir, topic string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), topic+"-") {
			n++
		}
	}
	return n
}
