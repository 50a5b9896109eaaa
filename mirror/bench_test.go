package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// BenchmarkMirror mirrors b.N records of 100 bytes over 12 partitions
// between two in-process brokers, through the Kafka group protocol and
// through the ZooKeeper groups, from the mirror's start until the target
// holds them all.
func BenchmarkMirror(b *testing.B) {
	for _, path := range []string{"kafka-group", "zookeeper-group"} {
		b.Run(path, func(b *testing.B) {
			benchMirror(b, path == "zookeeper-group", false)
		})
	}
}

// BenchmarkMirrorExactlyOnce is BenchmarkMirror's Kafka-group run beside
// exactly.once=true (a target transaction per poll, source offsets stored
// on the target).
func BenchmarkMirrorExactlyOnce(b *testing.B) {
	for _, eos := range []bool{false, true} {
		b.Run(fmt.Sprintf("exactly.once=%v", eos), func(b *testing.B) { benchMirror(b, false, eos) })
	}
}

func benchMirror(b *testing.B, zk, eos bool) {
	tb := b
	src, target := newCluster(tb, "bsrc"), newCluster(tb, "btarget")
	src.CreateTopicWithConfigs(tb, "bench", 12, nil)
	cl := src.Client(tb, kgo.ProducerLinger(5*time.Millisecond), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	value := make([]byte, 100)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: "bench", Value: value}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	sc := SourceConfig{Name: "src", Brokers: []string{src.Addr()}}
	if zk {
		sc.ZooKeeperConnect = src.ZooKeeper()
	}
	tadm := kadm.NewClient(target.Client(tb))
	b.SetBytes(100)
	b.ResetTimer()
	start := time.Now()
	stop := runMirror(tb, Config{Sources: []SourceConfig{sc}, TargetBrokers: []string{target.Addr()},
		Topics: "bench", GroupID: "bench", AuditDisable: true, ExactlyOnce: eos, Logger: testenv.Logger(b, slog.LevelWarn)}, nil)
	testenv.WaitFor(b, 10*time.Minute, "target complete", func() (bool, string) {
		listed, err := tadm.ListEndOffsets(ctx, "bench")
		if err != nil {
			return false, err.Error()
		}
		var n int64
		listed.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n >= int64(b.N), fmt.Sprintf("%d of %d", n, b.N)
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
	_ = stop()
}
