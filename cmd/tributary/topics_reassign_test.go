package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/brokertest"
)

// newTwoBrokers starts brokers 1 and 2 in this process on one memcoord
// server and returns their addresses; cleanup closes them.
func newTwoBrokers(t *testing.T) []string {
	t.Helper()
	return brokertest.NewCluster(t, 2).Addrs()
}

func TestTopicsReassign(t *testing.T) {
	addrs := newTwoBrokers(t)
	bs := strings.Join(addrs, ",")
	mustRun(t, "", "topics", "create", "--bootstrap", bs, "--topic", "mv", "--partitions", "1")
	res := mustRun(t, "", "topics", "describe", "--bootstrap", bs, "--topic", "mv")
	from := "1"
	if !strings.Contains(res.stdout, "\tReplicas: 1\t") {
		from = "2"
	}
	to := map[string]string{"1": "2", "2": "1"}[from]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "mv", Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	res = mustRun(t, "", "topics", "reassign", "--bootstrap", bs, "--topic", "mv", "--replicas", to, "--wait")
	if want := "Partition mv-0: reassignment to " + to + " started\nTopic mv: no reassignment in progress\n"; res.stdout != want {
		t.Fatalf("reassign printed %q, want %q", res.stdout, want)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res = mustRun(t, "", "topics", "describe", "--bootstrap", bs, "--topic", "mv")
		if strings.Contains(res.stdout, "\tLeader: "+to+"\tReplicas: "+to+"\tIsr: "+to+"\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the move, describe printed\n%s", res.stdout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics("mv"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for n := 0; n < 10; {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 10 records after the move", n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != fmt.Sprint("v", r.Offset) {
				t.Fatalf("offset %d: %q", r.Offset, r.Value)
			}
			n++
		})
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--cancel"}, "NO_REASSIGNMENT_IN_PROGRESS"},
		{[]string{"--replicas", "9"}, "INVALID_REPLICA_ASSIGNMENT"},
		{[]string{"--replicas", "1,x"}, "--replicas"},
		{[]string{"--replicas", "1,1"}, "given twice"},
		{nil, "--replicas"},
	} {
		args := append([]string{"topics", "reassign", "--bootstrap", bs, "--topic", "mv"}, c.args...)
		res := runCLI(t, 30*time.Second, "", args...)
		if res.err == nil || !strings.Contains(res.err.Error(), c.want) {
			t.Errorf("reassign %v: err %v, want %q", c.args, res.err, c.want)
		}
	}
}
