package partlog

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

func TestViewWriteToSendfileAndCopy(t *testing.T) {
	l := newLog(t, Config{})
	for i := range 50 {
		mustAppend(t, l, logtest.NewBatch(vals(string(rune('a'+i%26)), 20)...))
	}
	want := readBytes(t, l, 0, 1<<20)

	// A TCP connection takes the sendfile path.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, _ := io.ReadAll(c)
		got <- b
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	v, err := l.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	// Start mid-file via a second view to check the explicit offset.
	v2, err := l.Read(25*20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	v2.Truncate(100)
	n, err := v.WriteTo(conn)
	if err != nil || n != int64(len(want)) {
		t.Fatalf("WriteTo(tcp) = %d, %v; want %d", n, err, len(want))
	}
	n2, zeroCopy, err := v2.SendTo(conn)
	if err != nil || n2 != 100 || !zeroCopy {
		t.Fatalf("truncated SendTo(tcp) = %d, zeroCopy %v, %v", n2, zeroCopy, err)
	}
	conn.Close()
	var b []byte
	select {
	case b = <-got:
	case <-ctx.Done():
		t.Fatal("receiver timed out")
	}
	if !bytes.Equal(b[:len(want)], want) {
		t.Fatal("sendfile bytes differ from Bytes()")
	}
	v2b := readBytes(t, l, 25*20, 1<<20)
	if !bytes.Equal(b[len(want):], v2b[:100]) {
		t.Fatal("second view bytes differ")
	}

	// A plain writer takes the copy path.
	var buf bytes.Buffer
	if n, zeroCopy, err := v.SendTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), want) || n != int64(len(want)) || zeroCopy {
		t.Fatalf("SendTo(buffer) = %d, zeroCopy %v, %v", n, zeroCopy, err)
	}
	v.Release()
	v2.Release()
	if _, err := v.WriteTo(&buf); err == nil {
		t.Fatal("WriteTo after Release succeeded")
	}
}
