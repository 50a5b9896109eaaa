package broker

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShutdownResetsUnansweredConnections: at shutdown a connection that
// has answered nothing but ApiVersions is reset (franz-go retries a reset,
// but fails a request outright on an end of stream before any response),
// while one that has answered a request ends in order.
func TestShutdownResetsUnansweredConnections(t *testing.T) {
	b := newTestBroker(t, nil)
	fresh := dialRaw(t, b.Addr())
	apiVersionsOK(t, fresh)
	used := dialRaw(t, b.Addr())
	apiVersionsOK(t, used)
	if resp := used.roundTrip(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
		t.Fatalf("metadata lists brokers %+v", resp.Brokers)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	read := func(c *rawConn) error {
		_ = c.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err := c.conn.Read(make([]byte, 1))
		return err
	}
	if err := read(fresh); !isConnReset(err) {
		t.Errorf("connection that answered only ApiVersions: read %v after shutdown, want a reset", err)
	}
	if err := read(used); !errors.Is(err, io.EOF) {
		t.Errorf("connection that answered Metadata: read %v after shutdown, want EOF", err)
	}
}
