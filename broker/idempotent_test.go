package broker

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// flakyProxy forwards Kafka connections to a broker and, every cutEvery-th
// Produce request, delivers the request but cuts the connection before the
// response comes back: the client must retry a batch that is already
// written, which an idempotent producer does with the same sequence.
type flakyProxy struct {
	ln       net.Listener
	target   string
	cutEvery int64
	produces atomic.Int64
	cuts     atomic.Int64
	wg       sync.WaitGroup
}

func newFlakyProxy(t *testing.T, cutEvery int64) *flakyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &flakyProxy{ln: ln, cutEvery: cutEvery}
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *flakyProxy) serve() {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := p.ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.pipe(c) }()
		}
	}()
}

func (p *flakyProxy) pipe(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	// dropCorr is the correlation id whose response is swallowed, after
	// which both sides are closed; -1 while none is chosen.
	var dropCorr atomic.Int64
	dropCorr.Store(-1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer client.Close()
		for {
			frame, err := readProxyFrame(server)
			if err != nil {
				return
			}
			if int64(int32(binary.BigEndian.Uint32(frame[4:]))) == dropCorr.Load() {
				p.cuts.Add(1)
				return // the broker has answered: the batch is written
			}
			if _, err := client.Write(frame); err != nil {
				return
			}
		}
	}()
	for {
		frame, err := readProxyFrame(client)
		if err != nil {
			break
		}
		cut := int16(binary.BigEndian.Uint16(frame[4:])) == int16(kmsg.Produce) &&
			p.produces.Add(1)%p.cutEvery == 0
		if cut {
			dropCorr.Store(int64(int32(binary.BigEndian.Uint32(frame[8:]))))
		}
		if _, err := server.Write(frame); err != nil || cut {
			break
		}
	}
	<-done
}

func readProxyFrame(c net.Conn) ([]byte, error) {
	frame := make([]byte, 4)
	if _, err := io.ReadFull(c, frame); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(frame)
	if n < 8 || n > 64<<20 {
		return nil, io.ErrUnexpectedEOF
	}
	frame = append(frame, make([]byte, n)...)
	_, err := io.ReadFull(c, frame[4:])
	return frame, err
}

func TestIdempotentProducerRetriesWithoutDuplicates(t *testing.T) {
	proxy := newFlakyProxy(t, 7)
	b := newTestBroker(t, func(c *config.Config) { c.AdvertisedListeners = "PLAINTEXT://" + proxy.ln.Addr().String() })
	proxy.target = b.Addr()
	proxy.serve()
	ctx := testenv.Context(t, 2*time.Minute)
	const n, parts = 20_000, 3
	if err := b.CreateTopic(testenv.Context(t, time.Minute), "idem", parts); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, proxy.ln.Addr().String(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(2000),
		kgo.RequestRetries(100), kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	produceAll(t, ctx, cl, "idem", n, parts)
	if proxy.cuts.Load() == 0 {
		t.Fatal("proxy cut no connection: the test proved nothing")
	}
	dups := counterValue(t, b.reg, "tributary_broker_duplicate_batches_total", map[string]string{"topic": "idem"})
	t.Logf("%d produce requests, %d cut after delivery, %v duplicate batches refused", proxy.produces.Load(), proxy.cuts.Load(), dups)
	if dups == 0 {
		t.Fatal("no retried batch reached the broker as a duplicate")
	}
	// Exactly n records, each once, in order: consumeAll checks offsets are
	// dense and record i+parts follows record i in every partition.
	consumeAll(t, ctx, b.Addr(), "idem", n, parts)
	var total int64
	for p := range parts {
		total += b.partitions.Leader("idem", int32(p)).Log().EndOffset()
	}
	if total != n {
		t.Fatalf("logs hold %d records, want %d: duplicates were appended", total, n)
	}
}

func TestIdempotenceOnTheWire(t *testing.T) {
	b := newTestBroker(t, nil)
	if err := b.CreateTopic(testenv.Context(t, time.Minute), "seq", 1); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, b.Addr())
	init := kmsg.NewPtrInitProducerIDRequest()
	init.SetVersion(4)
	pr := c.roundTrip(init).(*kmsg.InitProducerIDResponse)
	pid := pr.ProducerID
	produce := func(seq int32, epoch int16, vals ...string) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		return c.roundTrip(produceRequest(9, -1, "seq", 0, makeBatch(1, pid, epoch, seq, vals...))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	if p := produce(0, 0, "a", "b"); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("first batch: %+v", p)
	}
	if p := produce(2, 0, "c"); p.ErrorCode != 0 || p.BaseOffset != 2 {
		t.Fatalf("second batch: %+v", p)
	}
	if p := produce(0, 0, "a", "b"); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("duplicate of first batch: error %v base %d, want success at 0", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	if p := produce(7, 0, "gap"); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence gap: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", kerr.ErrorForCode(p.ErrorCode))
	}
	if end := b.partitions.Leader("seq", 0).Log().EndOffset(); end != 3 {
		t.Fatalf("log end %d, want 3", end)
	}
}
