package broker

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// FuzzRequest sends arbitrary frame bodies to a live broker over a real
// connection. Whatever the bytes, the broker must not panic (a panic in a
// connection goroutine kills the test binary), must either answer or close
// that connection, and must keep serving a bystander connection.
func FuzzRequest(f *testing.F) {
	var fm kmsg.RequestFormatter
	seed := func(req kmsg.Request) { f.Add(fm.AppendRequest(nil, req, 1)[4:]) }
	for k, spec := range apiTable {
		for _, v := range []int16{spec.min, spec.max} {
			req := kmsg.RequestForKey(k)
			req.SetVersion(v)
			seed(req)
		}
	}
	seed(produceRequest(9, 1, "fz", 0, makeBatch(1, -1, -1, -1, "a", "b")))
	seed(produceRequest(3, -1, "fz", 0, makeBatch(1, 5, 0, 0, "a")))
	seed(fetchRequest(12, "fz", 0, 0, 10, 1))
	seed(fetchRequest(4, "fz", 0, 0, 10, 1))
	f.Add([]byte{})
	f.Add([]byte{0, 18, 0, 9, 0, 0, 0, 1, 255, 255})
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 1, 'x', 0, 0xff, 0xff, 0xff, 0xff, 0x7f})

	b := newTestBroker(f, func(c *config.Config) { c.SocketRequestMaxBytes = 1 << 20 })
	if err := b.CreateTopic(testenv.Context(f, time.Minute), "fz", 1); err != nil {
		f.Fatal(err)
	}
	bystander := dialRaw(f, b.Addr())

	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := net.DialTimeout("tcp", b.Addr(), 5*time.Second)
		if err != nil {
			t.Fatalf("broker stopped accepting: %v", err)
		}
		defer c.Close()
		wait := 2 * time.Second
		if expectsNoResponse(body) {
			wait = 200 * time.Millisecond
		}
		_ = c.SetDeadline(time.Now().Add(wait))
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		if _, err := c.Write(append(frame, body...)); err != nil {
			return // closed already: fine
		}
		// Either a response frame or a close; never a hang past max_wait.
		var size [4]byte
		if _, err := c.Read(size[:]); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() && expectsNoResponse(body) {
				return
			}
		}
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(0)
		bystander.t = t
		if resp := bystander.roundTrip(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
			t.Fatalf("bystander ApiVersions error %d", resp.ErrorCode)
		}
	})
}

// expectsNoResponse: a valid acks=0 Produce, or a Fetch long-polling longer
// than the read deadline, legitimately sends nothing back in time.
func expectsNoResponse(body []byte) bool {
	if len(body) < 4 {
		return false
	}
	key := int16(binary.BigEndian.Uint16(body))
	return key == int16(kmsg.Produce) || key == int16(kmsg.Fetch)
}
