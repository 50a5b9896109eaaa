package broker

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

// killableDialer dials normally until killed; then it closes every
// connection it made and refuses new ones, so the client's last requests
// (its LeaveGroup heartbeat among them) never reach the broker: a process
// killed with -9, as the group coordinator sees it.
type killableDialer struct {
	mu     sync.Mutex
	conns  []net.Conn
	killed bool
}

func (d *killableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
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

func (d *killableDialer) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.killed = true
	for _, c := range d.conns {
		_ = c.Close()
	}
}

// processed counts, per record number, how often a member handled it.
type processed struct {
	mu   sync.Mutex
	seen map[int]int
}

func (p *processed) add(n int) {
	p.mu.Lock()
	p.seen[n]++
	p.mu.Unlock()
}

func (p *processed) missing(total int) []int {
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

// runMember consumes with the KIP-848 protocol until ctx ends, handling
// every record and committing what it handled after each poll.
func runMember(t *testing.T, ctx context.Context, addr, group, topic string, p *processed, dial *killableDialer) *kgo.Client {
	t.Helper()
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond),
	}
	if dial != nil {
		opts = append(opts, kgo.Dialer(dial.dial), kgo.RetryTimeout(time.Second))
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
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
				p.add(n)
			})
			_ = cl.CommitUncommittedOffsets(ctx)
		}
	}()
	return cl
}

// awaitAssignment waits until the group is Stable with members members
// and every partition of topic assigned to exactly one of them, both in
// the current and the target assignment.
func awaitAssignment(t *testing.T, ctx context.Context, cl *kgo.Client, group string, members, partitions int) {
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

// TestConsumerGroupKgoServerSide: franz-go members on the KIP-848
// protocol (ServerSideBalancer) under produce load; one member's client
// is cut off without leaving, one is added. Every record is processed at
// least once, the final committed offsets are the partitions' ends, and
// the assignment is stable and complete after each change.
func TestConsumerGroupKgoServerSide(t *testing.T) {
	b := newTestBroker(t, func(c *Config) {
		groupTestConfig(c)
		c.Groups.ConsumerSessionTimeout = 3 * time.Second
		c.Groups.ConsumerHeartbeatInterval = 200 * time.Millisecond
	})
	ctx := testContext(t, 2*time.Minute)
	const parts, total, topic, group = 6, 3000, "kip848", "g848"
	if err := b.CreateTopic(ctx, topic, parts); err != nil {
		t.Fatal(err)
	}
	admin := newClient(t, b.Addr())
	p := &processed{seen: map[int]int{}}

	produced := make(chan error, 1)
	go func() {
		prod := newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		for i := range total {
			r := &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: []byte(strconv.Itoa(i))}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				produced <- err
				return
			}
			if i%100 == 0 {
				time.Sleep(50 * time.Millisecond)
			}
		}
		produced <- nil
	}()

	memberCtx, stop := context.WithCancel(ctx)
	defer stop()
	var clients []*kgo.Client
	victim := &killableDialer{}
	for i := range 3 {
		var d *killableDialer
		if i == 0 {
			d = victim
		}
		clients = append(clients, runMember(t, memberCtx, b.Addr(), group, topic, p, d))
	}
	awaitAssignment(t, ctx, admin, group, 3, parts)

	victim.kill()
	go clients[0].Close() // its leave cannot reach the broker
	start := time.Now()
	awaitAssignment(t, ctx, admin, group, 2, parts)
	t.Logf("member cut off: group reassigned after %v", time.Since(start))

	clients = append(clients, runMember(t, memberCtx, b.Addr(), group, topic, p, nil))
	start = time.Now()
	awaitAssignment(t, ctx, admin, group, 3, parts)
	t.Logf("member added: group settled after %v", time.Since(start))

	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(admin)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for {
		offs, err := adm.FetchOffsets(ctx, group)
		missing := p.missing(total)
		exact := err == nil
		ends.Each(func(o kadm.ListedOffset) {
			c, ok := offs.Lookup(topic, o.Partition)
			exact = exact && ok && c.At == o.Offset
		})
		if exact && len(missing) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("missing records %v (of %d); committed %v, ends %v (err %v)", missing, total, offs, ends, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	stop()
	for _, cl := range clients[1:] {
		cl.Close()
	}
}
