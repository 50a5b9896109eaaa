package kafkacompat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testkit/kafkatest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// record is one produced record, as the tools should show it.
type record struct{ key, value string }

// toolsTopicConfigs are the topic's overrides: segments small enough that a
// few kilobytes make several of them, and an index entry every kilobyte so
// that the offset indexes have entries for DumpLogSegments to verify.
var toolsTopicConfigs = map[string]string{
	"segment.bytes":        "4096",
	"index.interval.bytes": "1024",
}

// TestKafka28Tools runs Apache Kafka 2.8.2's TopicCommand, ConfigCommand
// and DumpLogSegments against two broker processes and checks what they
// print against what kadm reports and what was produced.
func TestKafka28Tools(t *testing.T) {
	t.Parallel()
	tools := testenv.Kafka28Tools(t)
	c := startCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const topic = "compat-tools"
	const partitions = 3
	configs := map[string]*string{}
	for k, v := range toolsTopicConfigs {
		configs[k] = kadm.StringPtr(v)
	}
	td := kafkatest.CreateTopic(t, c.Addrs(), topic, partitions, configs)
	produced := produceRounds(t, ctx, c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression())), topic, partitions, 20, 3)

	t.Run("TopicCommand", func(t *testing.T) { checkTopicCommand(t, ctx, tools, c, topic) })
	t.Run("ConfigCommand", func(t *testing.T) { checkConfigCommand(t, ctx, tools, c, topic) })
	t.Run("DumpLogSegments", func(t *testing.T) {
		leader := td.Partitions[0].Leader
		checkDumpLogSegments(t, ctx, tools, filepath.Join(c.LogDir(leader), topic+"-0"), produced[0])
	})
}

// produceRounds produces rounds × perRound records to every partition, one
// synchronous round at a time so that each partition's log gets many
// batches (and so several segments); it returns what each partition got,
// in order.
func produceRounds(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partitions, rounds, perRound int) map[int32][]record {
	t.Helper()
	out := map[int32][]record{}
	for r := 0; r < rounds; r++ {
		var batch []*kgo.Record
		for p := int32(0); p < int32(partitions); p++ {
			for i := 0; i < perRound; i++ {
				n := len(out[p])
				rec := record{key: fmt.Sprintf("k-%d-%d", p, n), value: payload(p, n)}
				out[p] = append(out[p], rec)
				batch = append(batch, &kgo.Record{Topic: topic, Partition: p, Key: []byte(rec.key), Value: []byte(rec.value)})
			}
		}
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			t.Fatalf("produce round %d to %s: %v", r, topic, err)
		}
	}
	return out
}

// payload is record n of partition p: its coordinates, then letters up to
// 150 bytes (no spaces: DumpLogSegments prints it unquoted).
func payload(p int32, n int) string {
	b := []byte(fmt.Sprintf("tributary-%d-%d-", p, n))
	for len(b) < 150 {
		b = append(b, byte('a'+(len(b)+n)%26))
	}
	return string(b)
}

// runTool runs a Kafka tool in the working directory dir ("": the
// test's); it returns stdout and stderr (with the tools' warnings) and the
// exit error.
func runTool(t *testing.T, ctx context.Context, tools testenv.KafkaTools, dir, class string, args ...string) (string, string, error) {
	t.Helper()
	cmd := tools.Command(ctx, class, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s: %v in %v", class, strings.Join(args, " "), exitStatus(err), time.Since(start).Round(time.Millisecond))
	return stdout.String(), stderr.String(), err
}

func exitStatus(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

// mustRun is runTool failing t unless the tool exits 0.
func mustRun(t *testing.T, ctx context.Context, tools testenv.KafkaTools, class string, args ...string) string {
	t.Helper()
	stdout, stderr, err := runTool(t, ctx, tools, "", class, args...)
	if err != nil {
		t.Fatalf("%s failed (%v)\nstdout:\n%s\nstderr:\n%s", class, err, stdout, stderr)
	}
	return stdout
}

func checkTopicCommand(t *testing.T, ctx context.Context, tools testenv.KafkaTools, c *cluster, topic string) {
	const class = "kafka.admin.TopicCommand"
	md, err := kafkatest.MetadataFrom(ctx, c.Addr(1))
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}

	// --list: exactly the topics the brokers know.
	out := mustRun(t, ctx, tools, class, "--zookeeper", c.Connect(), "--list")
	var listed []string
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			listed = append(listed, line)
		}
	}
	slices.Sort(listed)
	want := slices.Sorted(maps.Keys(md.Topics))
	if !slices.Equal(listed, want) {
		t.Errorf("TopicCommand --list printed %q; the brokers' metadata has %q", listed, want)
	}

	// --describe: partitions, leaders, replicas and ISR as Metadata says,
	// and only the overrides the topic was created with.
	out = mustRun(t, ctx, tools, class, "--zookeeper", c.Connect(), "--describe", "--topic", topic)
	header, parts := parseTopicDescribe(t, out, topic)
	td := md.Topics[topic]
	if header["PartitionCount"] != strconv.Itoa(len(td.Partitions)) || header["ReplicationFactor"] != "1" {
		t.Errorf("TopicCommand --describe header %v; want PartitionCount %d, ReplicationFactor 1", header, len(td.Partitions))
	}
	if got := parseConfigList(header["Configs"]); !maps.Equal(got, toolsTopicConfigs) {
		t.Errorf("TopicCommand --describe shows configs %v; the topic's overrides are %v", got, toolsTopicConfigs)
	}
	wantParts := map[int32]partitionLine{}
	for p, d := range td.Partitions {
		wantParts[p] = partitionLine{leader: strconv.Itoa(int(d.Leader)), replicas: joinIDs(d.Replicas), isr: joinIDs(d.ISR)}
	}
	if !maps.Equal(parts, wantParts) {
		t.Errorf("TopicCommand --describe partitions:\n%v\nkadm Metadata:\n%v\noutput:\n%s", parts, wantParts, out)
	}

	// --describe through the brokers (AdminClient, Metadata v10+): the same
	// partitions, and the topic id the controller wrote to ZooKeeper.
	zkID := zkTopicID(t, ctx, c, topic)
	out = mustRun(t, ctx, tools, class, "--bootstrap-server", strings.Join(c.Addrs(), ","), "--describe", "--topic", topic)
	header, parts = parseTopicDescribe(t, out, topic)
	if header["TopicId"] != zkID {
		t.Errorf("TopicCommand --bootstrap-server --describe shows TopicId %q; /brokers/topics/%s has topic_id %q\noutput:\n%s", header["TopicId"], topic, zkID, out)
	}
	if !maps.Equal(parts, wantParts) {
		t.Errorf("TopicCommand --bootstrap-server --describe partitions:\n%v\nkadm Metadata:\n%v\noutput:\n%s", parts, wantParts, out)
	}
}

// zkTopicID reads the topic_id of /brokers/topics/<topic>.
func zkTopicID(t *testing.T, ctx context.Context, c *cluster, topic string) string {
	t.Helper()
	s, err := zkcoord.Connect(ctx, c.Connect(), zkcoord.Config{SessionTimeout: 10 * time.Second, ConnectionTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("zookeeper: %v", err)
	}
	defer s.Close()
	data, _, err := s.Get(ctx, "/brokers/topics/"+topic)
	if err != nil {
		t.Fatalf("reading /brokers/topics/%s: %v", topic, err)
	}
	var node struct {
		TopicID string `json:"topic_id"`
	}
	if err := json.Unmarshal(data, &node); err != nil || node.TopicID == "" {
		t.Fatalf("/brokers/topics/%s holds %s (%v); want a topic_id", topic, data, err)
	}
	return node.TopicID
}

type partitionLine struct{ leader, replicas, isr string }

func (p partitionLine) String() string {
	return fmt.Sprintf("Leader: %s Replicas: %s Isr: %s", p.leader, p.replicas, p.isr)
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// parseTopicDescribe reads TopicCommand --describe's output for one topic:
//
//	Topic: t	PartitionCount: 3	ReplicationFactor: 1	Configs: a=b,c=d
//		Topic: t	Partition: 0	Leader: 1	Replicas: 1	Isr: 1
func parseTopicDescribe(t *testing.T, out, topic string) (map[string]string, map[int32]partitionLine) {
	t.Helper()
	var header map[string]string
	parts := map[int32]partitionLine{}
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := map[string]string{}
		for _, f := range strings.Split(strings.TrimSpace(line), "\t") {
			k, v, ok := strings.Cut(f, ": ")
			if !ok {
				k, v = strings.TrimSuffix(f, ":"), "" // "Configs:" with none
			}
			fields[k] = v
		}
		if fields["Topic"] != topic {
			t.Fatalf("TopicCommand --describe: unexpected line %q in:\n%s", line, out)
		}
		if p, ok := fields["Partition"]; ok {
			n, err := strconv.Atoi(p)
			if err != nil {
				t.Fatalf("TopicCommand --describe: bad partition in %q", line)
			}
			parts[int32(n)] = partitionLine{leader: fields["Leader"], replicas: fields["Replicas"], isr: fields["Isr"]}
			continue
		}
		header = fields
	}
	if header == nil {
		t.Fatalf("TopicCommand --describe printed no topic line:\n%s", out)
	}
	return header, parts
}

// parseConfigList reads "a=b,c=d" (values here hold no commas).
func parseConfigList(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			out[k] = v
		}
	}
	return out
}

var configsLine = regexp.MustCompile(`(?m)^Configs for topic '([^']*)' are ?(.*)$`)

// describeTopicConfigs runs ConfigCommand --describe for every topic and
// returns topic -> overrides.
func describeTopicConfigs(t *testing.T, ctx context.Context, tools testenv.KafkaTools, c *cluster) (map[string]map[string]string, string) {
	t.Helper()
	out := mustRun(t, ctx, tools, "kafka.admin.ConfigCommand", "--zookeeper", c.Connect(), "--entity-type", "topics", "--describe")
	got := map[string]map[string]string{}
	for _, m := range configsLine.FindAllStringSubmatch(out, -1) {
		got[m[1]] = parseConfigList(m[2])
	}
	return got, out
}

func checkConfigCommand(t *testing.T, ctx context.Context, tools testenv.KafkaTools, c *cluster, topic string) {
	// Only the topic's real overrides: nothing of our own in /config/topics.
	got, out := describeTopicConfigs(t, ctx, tools, c)
	if !maps.Equal(got[topic], toolsTopicConfigs) {
		t.Errorf("ConfigCommand --describe shows %v for %s; its overrides are %v; output:\n%s", got[topic], topic, toolsTopicConfigs, out)
	}

	// --alter writes /config/topics/<t> and a change notification; the
	// brokers must apply it.
	stdout, stderr, err := runTool(t, ctx, tools, "", "kafka.admin.ConfigCommand", "--zookeeper", c.Connect(),
		"--entity-type", "topics", "--entity-name", topic, "--alter", "--add-config", "retention.ms=7200000")
	if err != nil || !strings.Contains(stdout, "Completed") {
		// Nothing was written: waiting for the brokers would only time out.
		t.Fatalf("ConfigCommand --alter --add-config retention.ms=7200000 failed (%v)\nstdout:\n%s\nstderr:\n%s", exitStatus(err), stdout, stderr)
	}
	want := maps.Clone(toolsTopicConfigs)
	want["retention.ms"] = "7200000"
	got, out = describeTopicConfigs(t, ctx, tools, c)
	if !maps.Equal(got[topic], want) {
		t.Errorf("after --alter, ConfigCommand --describe shows %v for %s; want %v; output:\n%s", got[topic], topic, want, out)
	}
	for _, id := range c.Live() {
		addr := c.Addr(id)
		var last string
		deadline := time.Now().Add(waitTimeout)
		for {
			value, source, err := describeTopicConfig(ctx, addr, topic, "retention.ms")
			if err == nil && value == "7200000" && source == kmsg.ConfigSourceDynamicTopicConfig {
				break
			}
			last = fmt.Sprintf("value %q source %v err %v", value, source, err)
			if time.Now().After(deadline) {
				t.Errorf("broker %d's DescribeConfigs for %s: retention.ms not 7200000 (DYNAMIC_TOPIC_CONFIG) within %v after ConfigCommand --alter; last: %s",
					id, topic, waitTimeout, last)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// describeTopicConfig asks the broker at addr (DescribeConfigs) for one
// config of topic.
func describeTopicConfig(ctx context.Context, addr, topic, name string) (string, kmsg.ConfigSource, error) {
	return describeConfigOn(ctx, addr, name, func(adm *kadm.Client) (kadm.ResourceConfigs, error) {
		return adm.DescribeTopicConfigs(ctx, topic)
	})
}

// describeBrokerConfig asks the broker at addr (DescribeConfigs) for one
// config of broker id.
func describeBrokerConfig(ctx context.Context, addr string, id int32, name string) (string, kmsg.ConfigSource, error) {
	return describeConfigOn(ctx, addr, name, func(adm *kadm.Client) (kadm.ResourceConfigs, error) {
		return adm.DescribeBrokerConfigs(ctx, id)
	})
}

// describeConfigOn returns config name of the one resource describe asks
// the broker at addr for.
func describeConfigOn(ctx context.Context, addr, name string, describe func(*kadm.Client) (kadm.ResourceConfigs, error)) (string, kmsg.ConfigSource, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return "", 0, err
	}
	defer cl.Close()
	rcs, err := describe(kadm.NewClient(cl))
	if err != nil {
		return "", 0, err
	}
	if len(rcs) != 1 {
		return "", 0, fmt.Errorf("%d resources described, want 1", len(rcs))
	}
	rc := rcs[0]
	if rc.Err != nil {
		return "", 0, rc.Err
	}
	for _, cfg := range rc.Configs {
		if cfg.Key == name {
			return cfg.MaybeValue(), cfg.Source, nil
		}
	}
	return "", 0, fmt.Errorf("%s not described", name)
}

// dumpProblems are what DumpLogSegments reports when a log and its indexes
// disagree (its offset-index mismatches, time-index mismatches and
// out-of-order timestamps, indexed offsets missing from the log) or when a
// log's offsets are not consecutive.
var dumpProblems = []string{"Mismatches", "mismatch", "out of order", "not found in the log", "found log offset: -1", "Non-consecutive", "Exception"}

// dataLine is a record line of --print-data-log: "| offset: N ... key: K payload: V".
var dataLine = regexp.MustCompile(`(?m)^\| offset: (\d+) .* key: (\S*) payload: (\S*)$`)

// awaitIndexFiles waits until every sealed segment of the partition in
// dir (all but the newest) has its .index and .timeindex and no file is
// being written (*.tmp): the broker writes a segment's index files in the
// background when it rolls.
func awaitIndexFiles(t *testing.T, dir string) {
	t.Helper()
	testenv.WaitFor(t, waitTimeout, "index files of every sealed segment ("+dir+")", func() (bool, string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return false, err.Error()
		}
		have := map[string]bool{}
		var logs []string
		for _, e := range entries {
			name := e.Name()
			if strings.HasSuffix(name, ".tmp") {
				return false, ""
			}
			have[name] = true
			if base, ok := strings.CutSuffix(name, ".log"); ok {
				logs = append(logs, base)
			}
		}
		slices.Sort(logs)
		for i, base := range logs {
			if i < len(logs)-1 && (!have[base+".index"] || !have[base+".timeindex"]) {
				return false, ""
			}
		}
		return true, ""
	})
}

func checkDumpLogSegments(t *testing.T, ctx context.Context, tools testenv.KafkaTools, dir string, want []record) {
	awaitIndexFiles(t, dir)
	var files []string
	logs, indexes := 0, 0
	for _, ext := range []string{"*.log", "*.index", "*.timeindex"} {
		m, _ := filepath.Glob(filepath.Join(dir, ext))
		files = append(files, m...)
		for _, f := range m {
			if ext == "*.log" {
				logs++
			} else if st, err := os.Stat(f); err == nil && st.Size() > 0 {
				indexes++
			}
		}
	}
	slices.Sort(files)
	// Relative to dir, where the tool runs: its reports stay readable.
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	if logs < 3 {
		t.Fatalf("%s has %d segments; the test needs several (segment.bytes=4096, %d records): %s", dir, logs, len(want), listing(dir))
	}
	if indexes == 0 {
		t.Errorf("no index file has an entry (index.interval.bytes=1024): nothing for DumpLogSegments to verify: %s", listing(dir))
	}
	t.Logf("%d segments, %d non-empty index files: %s", logs, indexes, listing(dir))
	list := strings.Join(files, ",")

	checkClean := func(mode, out string) {
		t.Helper()
		for _, p := range dumpProblems {
			if strings.Contains(out, p) {
				t.Errorf("DumpLogSegments %s reports %q:\n%s", mode, p, problemLines(out))
				break
			}
		}
	}

	// --print-data-log: every record we produced, in order, at its offset.
	stdout, stderr, err := runTool(t, ctx, tools, dir, "kafka.tools.DumpLogSegments", "--files", list, "--print-data-log")
	if err != nil {
		t.Errorf("DumpLogSegments --print-data-log failed (%v):\n%s", err, stderr)
	}
	checkClean("--print-data-log", stdout+stderr)
	var got []record
	for i, m := range dataLine.FindAllStringSubmatch(stdout, -1) {
		if m[1] != strconv.Itoa(i) {
			t.Errorf("DumpLogSegments --print-data-log: record %d printed at offset %s", i, m[1])
			break
		}
		got = append(got, record{key: m[2], value: m[3]})
	}
	if !slices.Equal(got, want) {
		i := firstDiff(got, want)
		t.Errorf("DumpLogSegments --print-data-log shows %d records; want the %d produced, in order; at offset %d it shows %v, want %v",
			len(got), len(want), i, at(got, i), at(want, i))
	}

	// The index checks: every index sane, every entry pointing at its record.
	stdout, stderr, err = runTool(t, ctx, tools, dir, "kafka.tools.DumpLogSegments", "--files", list, "--index-sanity-check")
	if err != nil {
		t.Errorf("DumpLogSegments --index-sanity-check failed (%v):\n%s", err, stderr)
	}
	checkClean("--index-sanity-check", stdout+stderr)
	for _, f := range files {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil && st.Size() > 0 && !strings.HasSuffix(f, ".log") &&
			!strings.Contains(stdout, f+" passed sanity check.") {
			t.Errorf("DumpLogSegments --index-sanity-check does not pass %s:\n%s", f, stdout+stderr)
		}
	}
	stdout, stderr, err = runTool(t, ctx, tools, dir, "kafka.tools.DumpLogSegments", "--files", list, "--verify-index-only")
	if err != nil {
		t.Errorf("DumpLogSegments --verify-index-only failed (%v):\n%s", err, stderr)
	}
	checkClean("--verify-index-only", stdout+stderr)
}

// problemLines keeps the lines of a dump that are not per-batch or
// per-record listings, which is where its complaints are.
func problemLines(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "| offset:") && !strings.HasPrefix(line, "baseOffset:") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// at describes rs[i], or its absence.
func at(rs []record, i int) string {
	if i >= len(rs) {
		return "nothing"
	}
	return fmt.Sprintf("key %s value %s", rs[i].key, rs[i].value)
}

func firstDiff(a, b []record) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// listing names dir's files with their sizes, for failure messages.
func listing(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	b.WriteString(dir + ":")
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			fmt.Fprintf(&b, " %s (%d)", e.Name(), info.Size())
		}
	}
	return b.String()
}
