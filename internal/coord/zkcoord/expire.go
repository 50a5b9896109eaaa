package zkcoord

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// ZooKeeper wire constants used by Expire (jute encoding, protocol
// version 0); frozen by the ZooKeeper protocol.
const (
	opCloseSession = 0xfffffff5 // -11 as a two's-complement int32
	closeXid       = 1
)

// snoopConn reads the server's connect response, the first frame on every
// connection, to learn the session password that Expire needs:
// go-zookeeper keeps it private.
type snoopConn struct {
	net.Conn
	s    *Session
	mu   sync.Mutex
	buf  []byte
	done bool
}

func (c *snoopConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	if !c.done && n > 0 {
		c.buf = append(c.buf, p[:n]...)
		if len(c.buf) >= 4 {
			size := int(binary.BigEndian.Uint32(c.buf))
			if len(c.buf) >= 4+size {
				c.s.notePassword(c.buf[4 : 4+size])
				c.done, c.buf = true, nil
			}
		}
	}
	c.mu.Unlock()
	return n, err
}

// notePassword decodes a connect response: protocolVersion int32,
// timeOut int32, sessionId int64, passwd (int32 length + bytes).
func (s *Session) notePassword(resp []byte) {
	if len(resp) < 20 {
		return
	}
	id := int64(binary.BigEndian.Uint64(resp[8:16]))
	n := int(int32(binary.BigEndian.Uint32(resp[16:20])))
	if id == 0 || n < 0 || len(resp) < 20+n {
		return // expired: the session keeps its old credentials
	}
	s.credsMu.Lock()
	s.passwd = append([]byte(nil), resp[20:20+n]...)
	s.credsMu.Unlock()
}

// Expire makes ZooKeeper expire this session, as a partition longer than
// the session timeout would, for failure tests: it opens a second
// connection presenting this session's id and password and sends
// closeSession on it (the standard trick; go-zookeeper has no API for it).
// The server deletes the session's ephemeral nodes and fires other
// sessions' watches before Expire returns; this client learns of the expiry
// when it reconnects, moments later, and then reports StateExpired.
func (s *Session) Expire(ctx context.Context) error {
	s.credsMu.Lock()
	passwd := s.passwd
	s.credsMu.Unlock()
	if passwd == nil {
		return errors.New("zkcoord: expire: session password unknown")
	}
	// A server may close the connection right after a closeSession without
	// answering (seen on followers while an ensemble member is down), and
	// then the session may or may not be gone: present it again until a
	// server says it has expired.
	for {
		expired, err := s.expireOnce(ctx, passwd)
		if err != nil || expired {
			return err
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("zkcoord: expire: session 0x%x still alive: %w", s.id, ctx.Err())
		}
	}
}

// expireOnce presents the session on a new connection and, if the server
// accepts it, sends closeSession. It reports whether the server said the
// session is gone: at the connect (expired already) or by answering the
// close.
func (s *Session) expireOnce(ctx context.Context, passwd []byte) (bool, error) {
	addr := s.conn.Server()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, fmt.Errorf("zkcoord: expire: %w", err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	}
	// connect request: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd
	req := binary.BigEndian.AppendUint32(nil, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 30000)
	req = binary.BigEndian.AppendUint64(req, uint64(s.id))
	req = binary.BigEndian.AppendUint32(req, uint32(len(passwd)))
	req = append(req, passwd...)
	if err := writeFrame(c, req); err != nil {
		return false, fmt.Errorf("zkcoord: expire: %w", err)
	}
	resp, err := readFrame(c)
	if err != nil {
		return false, fmt.Errorf("zkcoord: expire: connect response: %w", err)
	}
	if len(resp) < 16 || binary.BigEndian.Uint64(resp[8:16]) == 0 {
		return true, nil // expired
	}
	closeReq := binary.BigEndian.AppendUint32(nil, closeXid)
	closeReq = binary.BigEndian.AppendUint32(closeReq, opCloseSession)
	if err := writeFrame(c, closeReq); err != nil {
		return false, fmt.Errorf("zkcoord: expire: %w", err)
	}
	// The reply (xid, zxid, err) arrives once the session is gone.
	if _, err := readFrame(c); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil // closed without an answer: check again
		}
		return false, fmt.Errorf("zkcoord: expire: close response: %w", err)
	}
	return true, nil
}

func writeFrame(w io.Writer, body []byte) error {
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	_, err := w.Write(append(frame, body...))
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if size > 1<<20 {
		return nil, fmt.Errorf("frame of %d bytes", size)
	}
	body := make([]byte, size)
	_, err := io.ReadFull(r, body)
	return body, err
}
