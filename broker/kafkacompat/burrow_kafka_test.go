package kafkacompat

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestBurrowKafkaGroupLag runs Burrow 1.2.1's Kafka consumer module, which
// reads the group coordinator's __consumer_offsets topic and decodes its
// records, on a group whose offsets are committed through the Kafka
// protocol, and checks the lag it reports per partition.
func TestBurrowKafkaGroupLag(t *testing.T) {
	t.Parallel()
	burrowBin := testenv.Burrow(t)
	c := startCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const topic, group = "compat-burrow-kafka", "compat-burrow-kafka-group"
	counts := []int64{25, 40, 5}
	cl, end := produceCounts(t, ctx, c, topic, counts)

	// A first commit creates __consumer_offsets, which Burrow's module
	// needs at start; the second comes once Burrow knows the end offsets,
	// since it drops commits of partitions whose end offsets it lacks.
	adm := kadm.NewClient(cl)
	commit := func(offsets map[int32]int64) {
		t.Helper()
		var offs kadm.Offsets
		for p, o := range offsets {
			offs.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
		}
		resp, err := adm.CommitOffsets(ctx, group, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %v for group %s: %v", offsets, group, err)
		}
	}
	commit(map[int32]int64{0: 1, 1: 1, 2: 1})

	b := startBurrow(t, burrowBin, c, true)
	b.awaitTopicOffsets(t, ctx, c, topic, counts)

	committed := map[int32]int64{0: 20, 1: 7, 2: 5}
	commit(committed)
	b.checkLag(t, ctx, group, topic, end, committed)
}
