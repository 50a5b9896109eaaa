package kafkacompat

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testenv"
)

// TestKafka39AdminTools runs Apache Kafka 3.9's admin tools, which speak
// only the Kafka protocol (--bootstrap-server), against three broker
// processes, and checks what they did against what our brokers report.
func TestKafka39AdminTools(t *testing.T) {
	t.Parallel()
	tools := testenv.Kafka39Tools(t)
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bootstrap := strings.Join(c.bootstrap(), ",")

	t.Run("TopicCommandAlterPartitions", func(t *testing.T) { checkAlterPartitions(t, ctx, tools, c, bootstrap) })
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
	await(t, waitTimeout, "12 led partitions in kafka-topics --describe", func() bool {
		out = mustRun(t, ctx, tools, class, "--bootstrap-server", bootstrap, "--describe", "--topic", topic)
		lines := describeLine.FindAllStringSubmatch(out, -1)
		if len(lines) != 12 || !strings.Contains(out, "PartitionCount: 12") {
			return false
		}
		for _, l := range lines {
			if l[3] == "none" || l[3] == "-1" || len(strings.Split(l[4], ",")) != 2 {
				return false
			}
		}
		return true
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
