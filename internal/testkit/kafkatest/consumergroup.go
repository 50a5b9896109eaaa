package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KillableDialer (a kgo.Dialer) dials normally until killed; then it closes every
// connection it made and refuses new ones, so the client's last requests
// (its LeaveGroup heartbeat among them) never reach the broker: a process
// killed with -9, as the group coordinator sees it.
type KillableDialer struct {
	mu     sync.Mutex
	conns  []net.Conn
	killed bool
}

func (d *KillableDialer) Dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.killed {
		return nil, errors.New("killed")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *KillableDialer) Kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.killed = true
	for _, c := range d.conns {
		_ = c.Close()
	}
}

// Processed counts, per record number, how often a member handled it.
type Processed struct {
	mu   sync.Mutex
	seen map[int]int
}

// NewProcessed returns an empty count.
func NewProcessed() *Processed { return &Processed{seen: map[int]int{}} }

func (p *Processed) Add(n int) {
	p.mu.Lock()
	p.seen[n]++
	p.mu.Unlock()
}

func (p *Processed) Missing(total int) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for i := range total {
		if p.seen[i] == 0 {
			out = append(out, i)
		}
	}
	return out
}

// RunMember848 starts a franz-go group member on the KIP-848 protocol
// (ServerSideBalancer, the uniform assignor) that consumes topic until
// ctx ends or the client is closed, counting every record's number (its
// value in decimal) in p and committing what it handled after each poll;
// dial may be nil. The caller closes the client.
func RunMember848(t testing.TB, ctx context.Context, addrs []string, group, topic string, p *Processed, dial *KillableDialer) *kgo.Client {
	t.Helper()
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond),
	}
	if dial != nil {
		opts = append(opts, kgo.Dialer(dial.Dial), kgo.RetryTimeout(time.Second))
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if errors.Is(fs.Err0(), kgo.ErrClientClosed) {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				n, err := strconv.Atoi(string(r.Value))
				if err != nil {
					t.Errorf("record %s-%d@%d: %q", r.Topic, r.Partition, r.Offset, r.Value)
				}
				p.Add(n)
			})
			_ = cl.CommitUncommittedOffsets(ctx)
		}
	}()
	return cl
}

// AwaitConsumerGroup waits until the group is Stable with members members
// and every partition of topic assigned to exactly one of them, both in
// the current and the target assignment.
func AwaitConsumerGroup(t testing.TB, ctx context.Context, cl *kgo.Client, group string, members, partitions int) {
	t.Helper()
	var last string
	for {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Groups) == 1 {
			g := resp.Groups[0]
			owners := map[int32]int{}
			for _, m := range g.Members {
				for _, tp := range m.Assignment.TopicPartitions {
					for _, p := range tp.Partitions {
						owners[p]++
					}
				}
			}
			complete := len(owners) == partitions
			for _, n := range owners {
				complete = complete && n == 1
			}
			last = fmt.Sprintf("state %s, %d members, owners %v, error %v", g.State, len(g.Members), owners, kerr.ErrorForCode(g.ErrorCode))
			if g.ErrorCode == 0 && g.State == "Stable" && len(g.Members) == members && complete {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group never settled on %d members: %s", members, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ProduceNumbered writes records 0..total-1 (the value is the number in
// decimal) to topic, record i to partition i%partitions, one at a time
// with a pause every 100 so that it runs alongside what the test does,
// through cl (built with kgo.ManualPartitioner); it returns the first
// error.
func ProduceNumbered(ctx context.Context, cl *kgo.Client, topic string, partitions, total int) error {
	for i := range total {
		r := &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(strconv.Itoa(i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return err
		}
		if i%100 == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// AwaitProcessedAndCommitted waits until p counted every record
// 0..total-1 and the group's committed offsets of topic are exactly the
// partitions' end offsets.
func AwaitProcessedAndCommitted(t testing.TB, ctx context.Context, cl *kgo.Client, group, topic string, p *Processed, total int) {
	t.Helper()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for {
		offs, err := adm.FetchOffsets(ctx, group)
		missing := p.Missing(total)
		exact := err == nil
		ends.Each(func(o kadm.ListedOffset) {
			c, ok := offs.Lookup(topic, o.Partition)
			exact = exact && ok && c.At == o.Offset
		})
		if exact && len(missing) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("missing records %v (of %d); committed %v, ends %v (err %v)", missing, total, offs, ends, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// DescribeConsumerGroup returns the group as ConsumerGroupDescribe
// answers it, or fails t when the request fails.
func DescribeConsumerGroup(t testing.TB, ctx context.Context, cl *kgo.Client, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("describe %s: %v %+v", group, err, resp)
	}
	return resp.Groups[0]
}
