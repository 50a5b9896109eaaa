package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/testenv"
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
		{[]string{"--cancel", "--partition", "0"}, "NO_REASSIGNMENT_IN_PROGRESS"},
		{[]string{"--replicas", "9"}, "INVALID_REPLICA_ASSIGNMENT"},
		{[]string{"--replicas", "1,x"}, "--replicas"},
		{[]string{"--replicas", "1,1"}, "given twice"},
		{[]string{"--verify", "--cancel"}, "--verify"},
		{nil, "--replicas"},
	} {
		args := append([]string{"topics", "reassign", "--bootstrap", bs, "--topic", "mv"}, c.args...)
		res := runCLI(t, 30*time.Second, "", args...)
		if res.err == nil || !strings.Contains(res.err.Error(), c.want) {
			t.Errorf("reassign %v: err %v, want %q", c.args, res.err, c.want)
		}
	}
}

// TestTopicsReassignWaitsForISR is issue 39's `delete-records` then
// `reassign --wait`: --wait returns only once the new replicas are in the
// ISR, which they join from the leader's log start; a move that cannot
// complete (a new replica's broker stopped before it caught up) keeps
// --wait waiting until its timeout, and stays listed in progress; a
// topic-wide --cancel cancels it and exits 0, and with nothing in progress
// says so and exits 0 too, as kafka-reassign-partitions --cancel does.
func TestTopicsReassignWaitsForISR(t *testing.T) {
	c := brokertest.NewCluster(t, 3)
	addrs := c.Addrs()
	bs := strings.Join(addrs, ",")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// A leader sends at most 50 KB/s to the followers catching up of the
	// topics below: their moves take a second or more, not milliseconds.
	adm := kadm.NewClient(cl)
	rates, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "leader.replication.throttled.rate", Value: kadm.StringPtr("50000")}}, 1, 2, 3)
	for _, r := range rates {
		err = errors.Join(err, r.Err)
	}
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 1000)
	for _, topic := range []string{"g", "h"} {
		mustRun(t, "", "topics", "create", "--bootstrap", bs, "--topic", topic, "--partitions", "1",
			"--config", "leader.replication.throttled.replicas=*")
		for i := range 400 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i, big))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustRun(t, "", "topics", "delete-records", "--bootstrap", bs, "--topic", "g", "--partition", "0", "--offset", "50")
	leader := describedLeader(t, bs, "g")
	target := leader + "," + map[string]string{"1": "2,3", "2": "3,1", "3": "1,2"}[leader]
	start := time.Now()
	res := mustRun(t, "", "topics", "reassign", "--bootstrap", bs, "--topic", "g", "--replicas", target, "--wait")
	took := time.Since(start)
	if want := "Partition g-0: reassignment to " + target + " started\nTopic g: no reassignment in progress\n"; res.stdout != want {
		t.Fatalf("reassign printed %q, want %q", res.stdout, want)
	}
	res = mustRun(t, "", "topics", "describe", "--bootstrap", bs, "--topic", "g")
	if !strings.Contains(res.stdout, "\tReplicas: "+target+"\tIsr: ") || strings.Count(describedISR.FindString(res.stdout), ",") != 2 {
		t.Fatalf("right after reassign --wait (%v), describe printed\n%s", took, res.stdout)
	}
	t.Logf("reassign --wait returned after %v with every new replica in sync", took)

	// A move that cannot complete: the last new replica's broker stops
	// while it copies.
	leader = describedLeader(t, bs, "h")
	target = leader + "," + map[string]string{"1": "2,3", "2": "3,1", "3": "1,2"}[leader]
	stopped, _ := strconv.Atoi(target[len(target)-1:])
	waited := make(chan cliResult, 1)
	go func() {
		waited <- runCLI(t, time.Minute, "", "topics", "reassign", "--bootstrap", bs, "--topic", "h", "--replicas", target,
			"--wait", "--request-timeout", "8s")
	}()
	set := kadm.TopicsSet{}
	set.Add("h", 0)
	testenv.WaitFor(t, 30*time.Second, "the move of h listed", func() (bool, string) {
		listed, err := adm.ListPartitionReassignments(ctx, set)
		return err == nil && len(listed["h"]) == 1, fmt.Sprint(listed, err)
	})
	c.Stop(t, int32(stopped))
	res = <-waited
	if res.err == nil || !strings.Contains(res.err.Error(), "waiting for the reassignments of h") {
		t.Fatalf("reassign --wait of a move that cannot complete: err %v, stdout %q", res.err, res.stdout)
	}
	res = mustRun(t, "", "topics", "reassign", "--bootstrap", bs, "--topic", "h", "--verify")
	adding := target[strings.Index(target, ",")+1:]
	if want := "Partition h-0: reassignment in progress\tReplicas: " + target + "\tAdding: " + adding + "\tRemoving: \n"; res.stdout != want {
		t.Fatalf("--verify printed %q, want %q", res.stdout, want)
	}
	res = mustRun(t, "", "topics", "reassign", "--bootstrap", bs, "--topic", "h", "--cancel")
	if res.stdout != "Partition h-0: reassignment cancelled\n" {
		t.Fatalf("topic-wide cancel printed %q", res.stdout)
	}
	res = mustRun(t, "", "topics", "reassign", "--bootstrap", bs, "--topic", "h", "--cancel")
	if res.stdout != "Topic h: no reassignment in progress\n" {
		t.Fatalf("cancel with nothing in progress printed %q", res.stdout)
	}
	res = mustRun(t, "", "topics", "reassign", "--bootstrap", bs, "--topic", "h", "--verify")
	if res.stdout != "Partition h-0: no reassignment in progress\n" {
		t.Fatalf("--verify after the cancel printed %q", res.stdout)
	}
	c.Restart(t, int32(stopped))
}

// describedLeader returns the leader of partition 0 of topic.
func describedLeader(t *testing.T, bs, topic string) string {
	t.Helper()
	res := mustRun(t, "", "topics", "describe", "--bootstrap", bs, "--topic", topic)
	m := regexp.MustCompile(`Partition: 0\tLeader: (\d+)`).FindStringSubmatch(res.stdout)
	if m == nil {
		t.Fatalf("no leader in\n%s", res.stdout)
	}
	return m[1]
}
