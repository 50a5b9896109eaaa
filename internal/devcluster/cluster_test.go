package devcluster

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestValidateNamesTheField(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "Dir is required"},
		{Config{Dir: "d", Brokers: 65}, "Brokers 65"},
		{Config{Dir: "d", Registry: "nohost"}, `Registry "nohost"`},
		{Config{Dir: "d", ZooKeeper: "h:1/a//b"}, "ZooKeeper"},
	} {
		err := c.cfg.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrInvalidConfig naming %q", c.cfg, err, c.want)
		}
	}
}

// TestStopStartBroker: a broker stopped and started again comes back on
// its port with its partition's records; meanwhile the other broker keeps
// serving its own.
func TestStopStartBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{Name: "test", Dir: t.TempDir(), Brokers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	before := c.Bootstrap()
	cl, err := kgo.NewClient(kgo.SeedBrokers(before...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if resp, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "t"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: int32(i % 2), Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, 20)
	if err := c.StopBroker(2); err != nil {
		t.Fatal(err)
	}
	if err := c.StopBroker(2); err != nil {
		t.Fatalf("stopping a stopped broker: %v", err)
	}
	if err := c.StartBroker(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if after := c.Bootstrap(); after[1] != before[1] {
		t.Fatalf("broker 2 came back on %s, was %s", after[1], before[1])
	}
	produce(20, 40)
	rd, err := kgo.NewClient(kgo.SeedBrokers(before...), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	next := map[int32]int{0: 0, 1: 1}
	for seen := 0; seen < 40; {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 40: %v", seen, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != strconv.Itoa(next[r.Partition]) {
				t.Fatalf("partition %d: %s, want %d", r.Partition, r.Value, next[r.Partition])
			}
			next[r.Partition] += 2
			seen++
		})
	}
	if err := c.StartBroker(ctx, 3); !errors.Is(err, ErrNoBroker) {
		t.Errorf("StartBroker(3) on 2 brokers: %v, want ErrNoBroker", err)
	}
}
