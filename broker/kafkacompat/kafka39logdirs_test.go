package kafkacompat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestKafka39ReplicaLogDirs moves a partition between the two log.dirs of
// a broker process with Kafka 3.9's kafka-reassign-partitions and a
// "log_dirs" entry (AlterReplicaLogDirs), the copy throttled by
// replica.alter.log.dirs.io.max.bytes.per.second. kafka-log-dirs shows the
// future replica in the target meanwhile. The broker is SIGKILLed in the
// middle of the copy: it restarts with the one good copy where it was and
// no future directory. Run again, the move completes (--verify says so,
// kafka-log-dirs shows the replica only in the target) and every record
// reads back with its value.
func TestKafka39ReplicaLogDirs(t *testing.T) {
	t.Parallel()
	tools := testenv.Kafka39Tools(t)
	base := t.TempDir()
	dirs := []string{filepath.Join(base, "a"), filepath.Join(base, "b")}
	c := startClusterWith(t, 1, map[string]string{"log.dirs": strings.Join(dirs, ",")})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const reassign, logDirs = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand", "org.apache.kafka.tools.LogDirsCommand"
	const topic, records, size = "compat-logdir-move", 80, 100 << 10
	adm := kadm.NewClient(c.client(t))
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	pre := c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	want := map[string][]byte{}
	for i := 0; i < records; i++ {
		key := fmt.Sprint("rec-", i)
		want[key] = preloadValue(key, size)
		if err := pre.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: want[key]}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	source, target := dirs[0], dirs[1]
	if _, err := os.Stat(filepath.Join(source, topic+"-0")); err != nil {
		source, target = target, source
	}
	// 8 MB at 100 kB/s: over a minute to watch and to kill in, even
	// with a JVM tool taking 15 s to start on a busy machine.
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Value: kadm.StringPtr("100000")}}, 1)
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		t.Fatalf("setting the log dir throttle: %v", err)
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	js := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[1],"log_dirs":[%q]}]}`, topic, target)
	if err := os.WriteFile(plan, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	describe := func() logDirsReport {
		t.Helper()
		out := mustRun(t, ctx, tools, logDirs, "--bootstrap-server", c.live(), "--describe", "--topic-list", topic)
		_, js, ok := strings.Cut(out, "\n{")
		var r logDirsReport
		if !ok || json.Unmarshal([]byte("{"+js), &r) != nil {
			t.Fatalf("kafka-log-dirs printed:\n%s", out)
		}
		return r
	}
	// where lists the dirs holding the partition, "+future" marking a
	// future replica.
	where := func(r logDirsReport) []string {
		var out []string
		for _, br := range r.Brokers {
			for _, ld := range br.LogDirs {
				for _, p := range ld.Partitions {
					if p.Partition == topic+"-0" {
						s := ld.LogDir
						if p.IsFuture {
							s += "+future"
						}
						out = append(out, s)
					}
				}
			}
		}
		return out
	}

	out := mustRun(t, ctx, tools, reassign, "--bootstrap-server", c.live(), "--execute", "--reassignment-json-file", plan)
	t.Logf("--execute with log_dirs:\n%s", out)
	testenv.WaitFor(t, waitTimeout, "a future directory in "+target, func() (bool, string) {
		futures, _ := filepath.Glob(filepath.Join(target, topic+"-0.*-future"))
		return len(futures) == 1, fmt.Sprint(futures)
	})
	if got := where(describe()); len(got) != 2 || !slices.Contains(got, target+"+future") || !slices.Contains(got, source) {
		t.Fatalf("kafka-log-dirs during the move shows the partition in %v, want %s and %s+future", got, source, target)
	}

	// SIGKILL mid-copy: one good copy after the restart, where it was.
	killed := c.Proc(1)
	c.Kill(t, 1)
	if killed.Running() {
		t.Fatal("the broker survived SIGKILL")
	}
	if left, _ := filepath.Glob(filepath.Join(target, topic+"-0.*-future")); len(left) != 1 {
		t.Fatalf("the kill left %v: the copy was not under way", left)
	}
	// The killed broker's registration lasts until its session expires.
	zk, err := zkcoord.Connect(ctx, c.Connect(), zkcoord.Config{SessionTimeout: 10 * time.Second, ConnectionTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("zookeeper: %v", err)
	}
	defer zk.Close()
	testenv.WaitFor(t, waitTimeout, "the killed broker's session expiring", func() (bool, string) {
		exists, _, err := zk.Exists(ctx, "/brokers/ids/1")
		return err == nil && !exists, fmt.Sprint(err)
	})
	c.Start(t, 1)
	readAll(t, ctx, c, topic, want)
	if got := where(describe()); len(got) != 1 || got[0] != source {
		t.Fatalf("after the restart the partition is in %v, want only %s", got, source)
	}
	for _, d := range dirs {
		if left, _ := filepath.Glob(filepath.Join(d, topic+"-0.*")); len(left) != 0 {
			t.Fatalf("after the restart %s holds %v", d, left)
		}
	}

	// Again, unthrottled: the move completes.
	adm = kadm.NewClient(c.client(t)) // a client of the restarted broker
	res, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "replica.alter.log.dirs.io.max.bytes.per.second"}}, 1)
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		t.Fatalf("lifting the log dir throttle: %v", err)
	}
	mustRun(t, ctx, tools, reassign, "--bootstrap-server", c.live(), "--execute", "--reassignment-json-file", plan)
	testenv.WaitFor(t, waitTimeout, "--verify reporting the log dir move complete", func() (bool, string) {
		out = mustRun(t, ctx, tools, reassign, "--bootstrap-server", c.live(), "--verify", "--reassignment-json-file", plan)
		return strings.Contains(out, "completed") && !strings.Contains(out, "still in progress"), out
	})
	t.Logf("--verify:\n%s", out)
	if got := where(describe()); len(got) != 1 || got[0] != target {
		t.Fatalf("after the move the partition is in %v, want only %s", got, target)
	}
	readAll(t, ctx, c, topic, want)
}

// readAll reads topic from the start and checks it holds exactly want, by
// key and value.
func readAll(t *testing.T, ctx context.Context, c *cluster, topic string, want map[string][]byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.live(), ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(16<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]bool{}
	for len(seen) < len(want) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", len(seen), len(want))
		}
		fs.EachRecord(func(r *kgo.Record) {
			v, ok := want[string(r.Key)]
			if !ok || !bytes.Equal(v, r.Value) || seen[string(r.Key)] {
				t.Fatalf("offset %d: key %q, %d bytes: not a record produced once", r.Offset, r.Key, len(r.Value))
			}
			seen[string(r.Key)] = true
		})
	}
}
