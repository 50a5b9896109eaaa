package broker

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/security"
)

// apiSpec is the version range advertised for one implemented API.
type apiSpec struct{ min, max int16 }

// apiTable lists every API the broker implements, with exactly the version
// ranges that ApiVersions advertises. Ranges cover what franz-go 1.22 and
// librdkafka 2.0 use, and the old versions that tools which never ask
// ApiVersions still send (ListOffsets v0 from Burrow, OffsetCommit v1 from
// Sarama before 1.27; see doc.go); old message formats (Produce < 3, Fetch
// < 4) are not offered, as in Kafka 4.
var apiTable = map[int16]apiSpec{
	int16(kmsg.Produce):                 {3, 9},
	int16(kmsg.Fetch):                   {4, 12},
	int16(kmsg.ListOffsets):             {0, 6},
	int16(kmsg.Metadata):                {0, 12},
	int16(kmsg.ApiVersions):             {0, 3},
	int16(kmsg.CreateTopics):            {0, 7},
	int16(kmsg.DeleteTopics):            {0, 6},
	int16(kmsg.InitProducerID):          {0, 4},
	int16(kmsg.DescribeConfigs):         {0, 4},
	int16(kmsg.IncrementalAlterConfigs): {0, 1},
	// Replication (broker/partition): followers find where their logs
	// diverge.
	int16(kmsg.OffsetForLeaderEpoch): {0, 4},
	// The group coordinator's APIs (groups.go, broker/group).
	int16(kmsg.FindCoordinator): {0, 4},
	int16(kmsg.JoinGroup):       {0, 9},
	int16(kmsg.SyncGroup):       {0, 5},
	int16(kmsg.Heartbeat):       {0, 4},
	int16(kmsg.LeaveGroup):      {0, 5},
	int16(kmsg.OffsetCommit):    {1, 9}, // v9: member epochs (KIP-848)
	int16(kmsg.OffsetFetch):     {1, 9}, // v9: member epochs (KIP-848)
	int16(kmsg.ListGroups):      {0, 5},
	int16(kmsg.DescribeGroups):  {0, 5},
	int16(kmsg.DeleteGroups):    {0, 2},
	int16(kmsg.OffsetDelete):    {0, 0},
	// The consumer group protocol (KIP-848; consumergroup*.go).
	int16(kmsg.ConsumerGroupHeartbeat): {0, 1},
	int16(kmsg.ConsumerGroupDescribe):  {0, 1},
	// SASL on SASL_* listeners (saslhandshake.go). After SaslHandshake
	// v0 the SASL tokens come as bare frames (librdkafka only uses v1,
	// but will not speak SASL to a broker that does not advertise v0).
	int16(kmsg.SASLHandshake):    {0, 1},
	int16(kmsg.SASLAuthenticate): {0, 2},
	// SCRAM credentials in /config/users (broker/sasl).
	int16(kmsg.DescribeUserSCRAMCredentials): {0, 0},
	int16(kmsg.AlterUserSCRAMCredentials):    {0, 0},
	// ACLs in Kafka's ZooKeeper layout (broker/acl; authorize.go).
	int16(kmsg.DescribeACLs): {0, 3},
	int16(kmsg.CreateACLs):   {0, 3},
	int16(kmsg.DeleteACLs):   {0, 3},
	// Operations (issue 29): one file per API.
	int16(kmsg.CreatePartitions): {0, 3},
	int16(kmsg.ElectLeaders):     {0, 2},
	int16(kmsg.DeleteRecords):    {0, 2},
	int16(kmsg.DescribeLogDirs):  {0, 4},
	// Moving a replica between log.dirs (alterreplicalogdirs.go).
	int16(kmsg.AlterReplicaLogDirs): {0, 2},
	int16(kmsg.DescribeCluster):     {0, 1},
	int16(kmsg.AlterConfigs):        {0, 2},
	// Reassignment (KIP-455; reassign.go).
	int16(kmsg.AlterPartitionAssignments):  {0, 0},
	int16(kmsg.ListPartitionReassignments): {0, 0},
	// The transaction coordinator (txns.go, broker/txn).
	int16(kmsg.AddPartitionsToTxn):   {0, 4}, // v4: brokers' verify-only batches (KIP-890)
	int16(kmsg.AddOffsetsToTxn):      {0, 3},
	int16(kmsg.EndTxn):               {0, 3},
	int16(kmsg.DescribeTransactions): {0, 0},
	int16(kmsg.ListTransactions):     {0, 1},
	int16(kmsg.TxnOffsetCommit):      {0, 3},
	// Transactions, the partition side (txnlog.go).
	int16(kmsg.WriteTxnMarkers):   {0, 1},
	int16(kmsg.DescribeProducers): {0, 0},
	// Client quotas (KIP-546; broker/quota, clientquota.go).
	int16(kmsg.DescribeClientQuotas): {0, 1},
	int16(kmsg.AlterClientQuotas):    {0, 1},
}

// dispatch runs the handler of r's API; every key of apiTable has one.
func (b *Broker) dispatch(ctx context.Context, r *request) (reply, error) {
	switch kmsg.Key(r.key) {
	case kmsg.Produce:
		return b.handleProduce(ctx, r)
	case kmsg.Fetch:
		return b.handleFetch(ctx, r)
	case kmsg.OffsetForLeaderEpoch:
		return b.handleOffsetForLeaderEpoch(ctx, r)
	case kmsg.ListOffsets:
		return b.handleListOffsets(ctx, r)
	case kmsg.Metadata:
		return b.handleMetadata(ctx, r)
	case kmsg.ApiVersions:
		return b.handleAPIVersions(ctx, r)
	case kmsg.CreateTopics:
		return b.handleCreateTopics(ctx, r)
	case kmsg.DeleteTopics:
		return b.handleDeleteTopics(ctx, r)
	case kmsg.InitProducerID:
		return b.handleInitProducerID(ctx, r)
	case kmsg.WriteTxnMarkers:
		return b.handleWriteTxnMarkers(ctx, r)
	case kmsg.DescribeProducers:
		return b.handleDescribeProducers(ctx, r)
	case kmsg.DescribeConfigs:
		return b.handleDescribeConfigs(ctx, r)
	case kmsg.IncrementalAlterConfigs:
		return b.handleIncrementalAlterConfigs(ctx, r)
	case kmsg.FindCoordinator:
		return b.handleFindCoordinator(ctx, r)
	case kmsg.JoinGroup:
		return b.handleJoinGroup(ctx, r)
	case kmsg.SyncGroup:
		return b.handleSyncGroup(ctx, r)
	case kmsg.Heartbeat:
		return b.handleHeartbeat(ctx, r)
	case kmsg.LeaveGroup:
		return b.handleLeaveGroup(ctx, r)
	case kmsg.OffsetCommit:
		return b.handleOffsetCommit(ctx, r)
	case kmsg.OffsetFetch:
		return b.handleOffsetFetch(ctx, r)
	case kmsg.ListGroups:
		return b.handleListGroups(ctx, r)
	case kmsg.DescribeGroups:
		return b.handleDescribeGroups(ctx, r)
	case kmsg.DeleteGroups:
		return b.handleDeleteGroups(ctx, r)
	case kmsg.OffsetDelete:
		return b.handleOffsetDelete(ctx, r)
	case kmsg.ConsumerGroupHeartbeat:
		return b.handleConsumerGroupHeartbeat(ctx, r)
	case kmsg.ConsumerGroupDescribe:
		return b.handleConsumerGroupDescribe(ctx, r)
	case kmsg.SASLHandshake:
		return b.handleSASLHandshake(ctx, r)
	case kmsg.SASLAuthenticate:
		return b.handleSASLAuthenticate(ctx, r)
	case kmsg.DescribeUserSCRAMCredentials:
		return b.handleDescribeUserSCRAMCredentials(ctx, r)
	case kmsg.AlterUserSCRAMCredentials:
		return b.handleAlterUserSCRAMCredentials(ctx, r)
	case kmsg.DescribeACLs:
		return b.handleDescribeACLs(ctx, r)
	case kmsg.CreateACLs:
		return b.handleCreateACLs(ctx, r)
	case kmsg.DeleteACLs:
		return b.handleDeleteACLs(ctx, r)
	case kmsg.CreatePartitions:
		return b.handleCreatePartitions(ctx, r)
	case kmsg.ElectLeaders:
		return b.handleElectLeaders(ctx, r)
	case kmsg.DeleteRecords:
		return b.handleDeleteRecords(ctx, r)
	case kmsg.DescribeLogDirs:
		return b.handleDescribeLogDirs(ctx, r)
	case kmsg.AlterReplicaLogDirs:
		return b.handleAlterReplicaLogDirs(ctx, r)
	case kmsg.DescribeCluster:
		return b.handleDescribeCluster(ctx, r)
	case kmsg.AlterConfigs:
		return b.handleAlterConfigs(ctx, r)
	case kmsg.AlterPartitionAssignments:
		return b.handleAlterPartitionReassignments(ctx, r)
	case kmsg.ListPartitionReassignments:
		return b.handleListPartitionReassignments(ctx, r)
	case kmsg.DescribeClientQuotas:
		return b.handleDescribeClientQuotas(ctx, r)
	case kmsg.AlterClientQuotas:
		return b.handleAlterClientQuotas(ctx, r)
	case kmsg.AddPartitionsToTxn:
		return b.handleAddPartitionsToTxn(ctx, r)
	case kmsg.AddOffsetsToTxn:
		return b.handleAddOffsetsToTxn(ctx, r)
	case kmsg.EndTxn:
		return b.handleEndTxn(ctx, r)
	case kmsg.DescribeTransactions:
		return b.handleDescribeTransactions(ctx, r)
	case kmsg.ListTransactions:
		return b.handleListTransactions(ctx, r)
	case kmsg.TxnOffsetCommit:
		return b.handleTxnOffsetCommit(ctx, r)
	}
	return nil, fmt.Errorf("%w: api key %d", ErrUnsupportedRequest, r.key)
}

// request is one decoded request frame.
type request struct {
	key      int16
	version  int16
	corr     int32
	clientID *string
	msg      kmsg.Request
	// unsupportedVersion marks an ApiVersions request of a version we do
	// not speak: it is answered in v0 format, as Kafka does.
	unsupportedVersion bool
	frameSize          int
	conn               *connection
	// rawSASL marks a SASL token sent without Kafka framing after
	// SaslHandshake v0; msg is then a SASLAuthenticateRequest v0.
	rawSASL bool
	// throttle is the client quotas' throttle of the response, and
	// waited the time the handler spent waiting rather than working (a
	// Fetch's long poll), which request_percentage does not charge
	// (clientquota.go).
	throttle time.Duration
	waited   time.Duration
}

// connection is an accepted client connection and what the handlers know
// of it: the listener it arrived on (whose protocol says whether SASL must
// come first), its SASL progress and the principal it authenticated as.
type connection struct {
	net.Conn
	listener  *listener
	principal atomic.Pointer[string]
	// host is the peer's IP address, which ACL hosts match.
	host string
	sasl saslState
	// closeAfterReply, set by a handler, closes the connection once its
	// response is written (a refused login).
	closeAfterReply bool
	// rawSASL, set between SaslHandshake v0 and the end of its login,
	// makes the reader take each frame as a bare SASL token. The handler
	// sets it before writing the handshake's response, and the client
	// sends its token only after reading that.
	rawSASL atomic.Bool
	// mutedUntil (Unix nanoseconds) keeps a throttled connection from
	// being read or served until then (clientquota.go).
	mutedUntil atomic.Int64
}

// Principal is the connection's Kafka principal: User:<name> once
// authenticated (a TLS client certificate, or SASL), security.Anonymous
// before or without.
func (c *connection) Principal() string {
	if p := c.principal.Load(); p != nil {
		return *p
	}
	return security.Anonymous
}

// setPrincipal records who the connection authenticated as; SASL calls it
// again after its exchange.
func (c *connection) setPrincipal(p string) { c.principal.Store(&p) }

// reply is a response ready to be written as one frame.
type reply interface {
	// writeFrame writes the whole frame; it returns the bytes written.
	writeFrame(w *connWriter, r *request) (int64, error)
}

// kmsgReply is an ordinary response encoded in one piece.
type kmsgReply struct{ resp kmsg.Response }

// responseHeaderFlexible: flexible responses carry a tagged-field byte in
// the header, except ApiVersions, whose response header stays v0 so that a
// client can parse it before knowing the version.
func responseHeaderFlexible(r *request) bool {
	return r.msg.IsFlexible() && r.key != int16(kmsg.ApiVersions)
}

func (k kmsgReply) writeFrame(w *connWriter, r *request) (int64, error) {
	buf := w.scratch[:0]
	buf = append(buf, 0, 0, 0, 0)
	buf = kbin.AppendInt32(buf, r.corr)
	if responseHeaderFlexible(r) {
		buf = append(buf, 0)
	}
	buf = k.resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	w.scratch = buf
	n, err := w.conn.Write(buf)
	return int64(n), err
}

// connWriter is the write side of a connection, used by one goroutine.
type connWriter struct {
	conn    net.Conn
	scratch []byte
}

// acceptLoop accepts on one listener; every listener has its own, all
// feeding serveConn.
func (b *Broker) acceptLoop(l *listener) {
	defer b.wg.Done()
	spare := newAcceptReserve()
	defer spare.close()
	var backoff time.Duration
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if b.shutdownCtx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			if isNoDescriptors(err) && spare.use() {
				// The spare's slot lets one connection in: an operator's
				// admin client still reaches a broker at its limit.
				b.res.logs.log(slog.LevelWarn, "accept-reserve", "out of file descriptors; accepting on the reserve", "err", err)
				continue
			}
			// Out of file descriptors and the like: wait rather than spin.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			b.res.logs.log(slog.LevelWarn, "accept-failed", "accept failed", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-b.shutdownCtx.Done():
				return
			}
			continue
		}
		backoff = 0
		spare.refill()
		if ok, limit := b.res.conns.admit(remoteIP(c)); !ok {
			b.res.refused.WithLabelValues(limit).Inc()
			b.res.logs.log(slog.LevelInfo, "refused-"+limit, "connection refused", "limit", limit, "remote", c.RemoteAddr().String())
			c.Close()
			continue
		}
		b.connMu.Lock()
		if b.shutdownCtx.Err() != nil {
			b.connMu.Unlock()
			c.Close()
			return
		}
		b.conns[c] = struct{}{}
		b.wg.Add(1)
		b.connMu.Unlock()
		b.metrics.connections.Inc()
		go b.serveConn(&connection{Conn: c, listener: l, host: remoteIP(c)})
	}
}

// handshake runs the TLS handshake of a connection on a TLS listener under
// ssl.handshake.timeout.ms and records its principal. A failure (a
// plaintext client, garbage, an untrusted or expired certificate) is
// counted and logged, rate-limited, with the peer's address; the caller
// closes the connection. The connection already counts against
// max.connections, so a flood of stalled handshakes is bounded.
func (b *Broker) handshake(c *connection) error {
	l := c.listener
	tc, ok := c.Conn.(*tls.Conn)
	if !ok {
		c.setPrincipal(security.Anonymous)
		return nil
	}
	timeout := b.cfg.TLSHandshakeTimeout
	if timeout <= 0 {
		timeout = config.DefaultTLSHandshakeTimeout
	}
	ctx, cancel := context.WithTimeout(b.shutdownCtx, timeout)
	defer cancel()
	err := tc.HandshakeContext(ctx)
	var principal string
	if err == nil {
		principal, err = l.tls.Principal(tc.ConnectionState())
	}
	if err != nil {
		b.metrics.requestErrors.WithLabelValues("tls_handshake").Inc()
		if b.shutdownCtx.Err() == nil {
			b.res.logs.log(slog.LevelWarn, "tls-handshake-"+l.name, "TLS handshake failed; connection closed",
				"listener", l.name, "remote", c.RemoteAddr().String(), "err", err)
		}
		return err
	}
	c.setPrincipal(principal)
	return nil
}

// resetOnClose makes closing c send a reset instead of an orderly end. The
// broker does this, when it shuts down, to connections that have answered
// nothing but ApiVersions: franz-go takes an end of stream before a
// connection's first response for a TLS or SASL misconfiguration and fails
// the request without retrying it, while a reset is retried (on another
// broker once metadata shows the leaders moved). Such a connection has no
// response in flight for the reset to discard.
func resetOnClose(c net.Conn) {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	if tc, ok := c.(interface{ SetLinger(int) error }); ok {
		_ = tc.SetLinger(0)
	}
}

// readAhead bounds how many decoded requests wait behind the one being
// handled on a connection.
const readAhead = 16

func (b *Broker) serveConn(c *connection) {
	defer b.wg.Done()
	log := b.logger.With("remote", c.RemoteAddr().String())
	if err := b.handshake(c); err != nil {
		_ = c.Close()
		b.res.conns.release(remoteIP(c))
		b.forgetConn(c)
		return
	}
	if c.listener.sasl != nil {
		defer b.closeUnauthenticated(c).Stop()
	} else if b.onPrincipal != nil {
		b.onPrincipal(c.listener.name, c.Principal())
	}
	reqs := make(chan *request, readAhead)
	// connCtx ends when the peer goes away, so that a long-polling Fetch
	// does not wait out max_wait for a client that left.
	connCtx, peerGone := context.WithCancel(b.shutdownCtx)
	defer peerGone()
	defer b.res.conns.release(remoteIP(c))
	act := newConnActivity(b.cfg.Limits.WithDefaults().ConnectionsMaxIdle)
	go b.readRequests(c, reqs, log, peerGone, act)
	w := &connWriter{conn: c.Conn} // the raw conn: sendfile needs its *net.TCPConn
	broken := false
	answered := 0 // responses to requests other than ApiVersions
	for r := range reqs {
		if broken {
			act.inFlight.Add(-1)
			continue // drain so the reader can exit
		}
		if err := b.saslGate(c, r); err != nil {
			b.refuseUnauthenticated(c, r, err)
			broken = true
			_ = c.Close()
		} else if err := b.handle(connCtx, w, r, log); err != nil {
			log.Debug("closing connection", "err", err)
			broken = true
			_ = c.Close()
		} else if c.closeAfterReply {
			broken = true
			_ = c.Close()
		} else if r.key != int16(kmsg.ApiVersions) {
			answered++
		}
		act.touch()
		act.inFlight.Add(-1)
		c.waitMuted(connCtx)
	}
	if answered == 0 && b.shutdownCtx.Err() != nil {
		resetOnClose(c.Conn)
	}
	_ = c.Close()
	b.forgetConn(c)
}

// forgetConn drops a closed connection from the broker's set.
func (b *Broker) forgetConn(c *connection) {
	b.connMu.Lock()
	delete(b.conns, c.Conn)
	b.connMu.Unlock()
	b.metrics.connections.Dec()
}

// readRequests decodes frames until EOF, an error or shutdown, then closes
// reqs. A bad frame is logged and ends the connection.
// A connection idle for connections.max.idle.ms is closed here too.
func (b *Broker) readRequests(c *connection, reqs chan<- *request, log *slog.Logger, peerGone context.CancelFunc, act *connActivity) {
	defer close(reqs)
	// Small: a flood of short-lived connections must not cost 64 KiB
	// each; large frames bypass the buffer (readFrame).
	br := bufio.NewReaderSize(c, 8<<10)
	var sizeBuf [4]byte
	for {
		c.waitMuted(b.shutdownCtx) // a throttled connection is not read from
		act.armRead(c)
		// Close cancels shutdownCtx and then sets every connection's read
		// deadline to now; the arm above may have replaced that deadline,
		// so a connection whose client keeps sending would keep Close
		// waiting for ever. Checked after the arm: either Close's deadline
		// stands, or the cancel is visible here.
		if b.shutdownCtx.Err() != nil {
			return
		}
		if n, err := io.ReadFull(br, sizeBuf[:]); err != nil {
			var ne net.Error
			if n == 0 && errors.As(err, &ne) && ne.Timeout() && b.shutdownCtx.Err() == nil {
				if !act.expired() {
					continue // a long request in flight, or activity since the deadline was set
				}
				b.res.idleClosed.Inc()
				log.Debug("closing idle connection", "connections.max.idle.ms", act.idle.Milliseconds())
				peerGone()
				return
			}
			if b.shutdownCtx.Err() == nil {
				peerGone()
			}
			if !errors.Is(err, io.EOF) && b.shutdownCtx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				log.Debug("connection read ended", "err", err)
			}
			return
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if size < 0 || size > b.cfg.SocketRequestMaxBytes {
			b.badFrame(log, "too_large", fmt.Errorf("%w: %d bytes, socket.request.max.bytes is %d",
				ErrFrameTooLarge, size, b.cfg.SocketRequestMaxBytes))
			return
		}
		act.touch()
		act.armRead(c)
		frame, err := readFrame(br, int(size))
		if err != nil {
			log.Debug("connection closed mid-frame", "err", err)
			return
		}
		act.touch()
		if c.rawSASL.Load() {
			auth := kmsg.NewPtrSASLAuthenticateRequest()
			auth.SASLAuthBytes = frame
			act.inFlight.Add(1)
			reqs <- &request{key: int16(kmsg.SASLAuthenticate), msg: auth, frameSize: len(frame) + 4, conn: c, rawSASL: true}
			continue
		}
		r, err := b.decodeRequest(frame)
		if err != nil {
			if errors.Is(err, ErrUnsupportedRequest) {
				b.refuseUnsupported(c, r, err)
			} else {
				b.badFrame(log, "malformed", err)
			}
			return
		}
		r.conn = c
		act.inFlight.Add(1)
		reqs <- r
	}
}

// badFrame counts a protocol error and logs it at debug level; a summary
// goes out at most once a second (ratelog.go), so that a flood of bad
// requests cannot fill the disk with logs.
func (b *Broker) badFrame(log *slog.Logger, reason string, err error) {
	b.metrics.requestErrors.WithLabelValues(reason).Inc()
	log.Debug("closing connection on bad request", "reason", reason, "err", err)
	b.res.logs.log(slog.LevelWarn, "bad-request-"+reason, "closing connections on bad requests (details at debug level)",
		"reason", reason, "last_err", err)
}

// decodeRequest parses the request header and body of one frame. An error
// wrapping ErrUnsupportedRequest comes with the request's header.
func (b *Broker) decodeRequest(frame []byte) (*request, error) {
	rd := kbin.Reader{Src: frame}
	r := &request{frameSize: len(frame) + 4}
	r.key = rd.Int16()
	r.version = rd.Int16()
	r.corr = rd.Int32()
	r.clientID = rd.NullableString()
	if !rd.Ok() {
		return nil, fmt.Errorf("%w: short request header", ErrBadFrame)
	}
	spec, ok := apiTable[r.key]
	if !ok {
		return r, fmt.Errorf("%w: api key %d (%s)", ErrUnsupportedRequest, r.key, kmsg.NameForKey(r.key))
	}
	r.msg = kmsg.RequestForKey(r.key)
	if r.version < spec.min || r.version > spec.max {
		if r.key != int16(kmsg.ApiVersions) {
			return r, fmt.Errorf("%w: %s v%d (supported v%d-v%d)", ErrUnsupportedRequest,
				kmsg.NameForKey(r.key), r.version, spec.min, spec.max)
		}
		// The body of a newer ApiVersions may not parse; it is not needed.
		r.unsupportedVersion = true
		r.msg.SetVersion(0)
		return r, nil
	}
	r.msg.SetVersion(r.version)
	if r.msg.IsFlexible() {
		kmsg.SkipTags(&rd)
		if !rd.Ok() {
			return nil, fmt.Errorf("%w: bad header tags", ErrBadFrame)
		}
	}
	if err := r.msg.ReadFrom(rd.Src); err != nil {
		return nil, fmt.Errorf("%w: %s v%d body: %v", ErrBadFrame, kmsg.NameForKey(r.key), r.version, err)
	}
	return r, nil
}

// handle runs one request and writes its response. An error means the
// connection must be closed.
func (b *Broker) handle(ctx context.Context, w *connWriter, r *request, log *slog.Logger) error {
	start := time.Now()
	rep, err := b.dispatch(ctx, r)
	if err != nil {
		b.badFrame(log, "invalid", err)
		return err
	}
	if rep != nil {
		throttle, clientThrottles := b.applyThrottle(r, rep, time.Since(start)-r.waited)
		if throttle > 0 && r.conn != nil {
			if clientThrottles {
				defer r.conn.mute(throttle) // after the response (KIP-219)
			} else {
				r.conn.mute(throttle)
				r.conn.waitMuted(ctx)
			}
		}
		if _, err := rep.writeFrame(w, r); err != nil {
			return err
		}
	}
	b.metrics.requests.WithLabelValues(kmsg.NameForKey(r.key)).Observe(time.Since(start).Seconds())
	return nil
}
