package broker

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/kafkatest"
)

// rawConn is a bare Kafka connection for hand-made requests.
type rawConn struct {
	t    testing.TB
	conn net.Conn
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, conn: c}
}

// send writes req (at its set version) as one frame.
func (c *rawConn) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	var f kmsg.RequestFormatter
	frame := f.AppendRequest(nil, req, c.corr)
	c.writeRaw(frame)
	return c.corr
}

func (c *rawConn) writeRaw(b []byte) {
	c.t.Helper()
	_ = c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one response frame body (after the size).
func (c *rawConn) readFrame(timeout time.Duration) ([]byte, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(c.conn, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.conn, body); err != nil {
		return nil, err
	}
	return body, nil
}

// roundTrip sends req and decodes its response, checking the correlation id.
func (c *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	corr := c.send(req)
	body, err := c.readFrame(10 * time.Second)
	if err != nil {
		c.t.Fatalf("%s v%d: reading response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return decodeResponse(c.t, req, corr, body)
}

func decodeResponse(t testing.TB, req kmsg.Request, corr int32, body []byte) kmsg.Response {
	t.Helper()
	rd := kbin.Reader{Src: body}
	if got := rd.Int32(); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	if req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		kmsg.SkipTags(&rd)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(rd.Src); err != nil {
		t.Fatalf("%s v%d: decoding response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// expectClosed asserts the broker closed the connection.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1)
	_, err := c.conn.Read(buf)
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		c.t.Fatalf("connection still open (read err %v)", err)
	}
}

// makeBatch builds a valid magic-2 batch of records with the given values.
var makeBatch = kafkatest.Batch

func produceRequest(version int16, acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func fetchRequest(version int16, topic string, partition int32, offset int64, maxWait, minBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.ReplicaID = -1
	req.MaxWaitMillis = maxWait
	req.MinBytes = minBytes
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 1 << 20
	rp.CurrentLeaderEpoch = -1
	rp.LastFetchedEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}
