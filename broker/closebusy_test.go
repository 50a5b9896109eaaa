package broker

import (
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestCloseWithBusyClients: Close returns while clients keep sending. Each
// read re-arms the connection's idle deadline, which once replaced the
// "deadline now" Close had set, so a client that never paused kept Close
// waiting for ever (seen as hung broker stops in the pipeline soak).
func TestCloseWithBusyClients(t *testing.T) {
	b := newTestBroker(t, nil)
	var sent atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	for range 4 {
		c, err := net.DialTimeout("tcp", b.Addr(), 5*time.Second)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		go func() {
			var f kmsg.RequestFormatter
			req := kmsg.NewPtrApiVersionsRequest()
			for corr := int32(1); ; corr++ {
				select {
				case <-stop:
					return
				default:
				}
				// Requests only, responses never read: the broker always
				// has the next frame waiting on this connection.
				if _, err := c.Write(f.AppendRequest(nil, req, corr)); err != nil {
					return
				}
				sent.Add(1)
			}
		}()
	}
	testenv.WaitFor(t, 30*time.Second, "clients to send 1000 requests", func() (bool, string) {
		n := sent.Load()
		return n >= 1000, fmt.Sprintf("%d sent", n)
	})
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("Close still waiting 60 s after it was called, with clients sending")
	}
}
