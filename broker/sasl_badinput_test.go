package broker

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/sasl"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// kafkaAuthFailed is Kafka's message for a refused login.
func kafkaAuthFailed(mech string) string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech
}

func saslHandshake(c *rawConn, mech string) *kmsg.SASLHandshakeResponse {
	c.t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(1)
	req.Mechanism = mech
	return c.roundTrip(req).(*kmsg.SASLHandshakeResponse)
}

func saslAuthenticate(c *rawConn, version int16, msg []byte) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(version)
	req.SASLAuthBytes = msg
	return c.roundTrip(req).(*kmsg.SASLAuthenticateResponse)
}

// rawLogin logs c in with franz-go's mech over SaslHandshake v1 and
// SaslAuthenticate v2; it returns the last response (an error code, or
// the end of the exchange).
func rawLogin(c *rawConn, mech kgosasl.Mechanism) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	if hs := saslHandshake(c, mech.Name()); hs.ErrorCode != 0 {
		c.t.Fatalf("SaslHandshake %s: code %d", mech.Name(), hs.ErrorCode)
	}
	sess, msg, err := mech.Authenticate(context.Background(), c.conn.RemoteAddr().String())
	if err != nil {
		c.t.Fatal(err)
	}
	for {
		resp := saslAuthenticate(c, 2, msg)
		if resp.ErrorCode != 0 {
			return resp
		}
		done, next, err := sess.Challenge(resp.SASLAuthBytes)
		if err != nil {
			c.t.Fatalf("client refused the server's message: %v", err)
		}
		if done {
			return resp
		}
		msg = next
	}
}

func metadataRequest() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	return req
}

// TestSASLBadInput: each refused login or out-of-turn request gets
// Kafka's answer or a closed connection, and a good client is served
// after every one.
func TestSASLBadInput(t *testing.T) {
	b := newSASLBroker(t, nil)
	addr := b.ListenerAddr("SASL_PLAINTEXT")
	ctx := testenv.Context(t, 2*time.Minute)
	good := b.saslClient(t, "SASL_PLAINTEXT", mechanism(sasl.ScramSHA512, "alice", aliceSecret))
	stillServing := func(t *testing.T) {
		t.Helper()
		if len(metadataBrokers(t, ctx, good)) != 1 {
			t.Fatal("metadata from the good client names no broker")
		}
	}

	t.Run("wrong password", func(t *testing.T) {
		for _, m := range []string{sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512} {
			user := "alice"
			if m == sasl.Plain {
				user = "pat"
			}
			c := dialRaw(t, addr)
			resp := rawLogin(c, mechanism(m, user, "not-the-password"))
			if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != kafkaAuthFailed(m) {
				t.Errorf("%s, wrong password: code %d message %v", m, resp.ErrorCode, resp.ErrorMessage)
			}
			c.expectClosed()
		}
		// Through franz-go: the error is SASL_AUTHENTICATION_FAILED.
		bad := b.saslClient(t, "SASL_PLAINTEXT", mechanism(sasl.ScramSHA256, "alice", "wrong"), kgo.RetryTimeout(time.Second))
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bad)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("franz-go with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
		stillServing(t)
	})
	t.Run("unknown user", func(t *testing.T) {
		c := dialRaw(t, addr)
		resp := rawLogin(c, mechanism(sasl.ScramSHA256, "mallory", "x"))
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || *resp.ErrorMessage != kafkaAuthFailed(sasl.ScramSHA256) {
			t.Errorf("unknown user: code %d message %v", resp.ErrorCode, resp.ErrorMessage)
		}
		c.expectClosed()
	})
	t.Run("mechanism not enabled", func(t *testing.T) {
		for _, m := range []string{"GSSAPI", "SCRAM-SHA-1", "plain", ""} {
			c := dialRaw(t, addr)
			hs := saslHandshake(c, m)
			want := []string{sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512}
			if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || !slices.Equal(hs.SupportedMechanisms, want) {
				t.Errorf("handshake %q: code %d mechanisms %v", m, hs.ErrorCode, hs.SupportedMechanisms)
			}
			c.expectClosed()
		}
		stillServing(t)
	})
	t.Run("metadata before authenticating", func(t *testing.T) {
		c := dialRaw(t, addr)
		// ApiVersions is served first, as Kafka does.
		av := c.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
		if av.ErrorCode != 0 || len(av.ApiKeys) == 0 {
			t.Fatalf("ApiVersions before authenticating: %+v", av)
		}
		c.send(metadataRequest())
		c.expectClosed()
		// After a handshake but before the exchange ends, too.
		c = dialRaw(t, addr)
		saslHandshake(c, sasl.ScramSHA256)
		c.send(metadataRequest())
		c.expectClosed()
		// A SaslAuthenticate without a handshake.
		c = dialRaw(t, addr)
		c.send(kmsg.NewPtrSASLAuthenticateRequest())
		c.expectClosed()
		stillServing(t)
	})
	t.Run("garbage SaslAuthenticate bytes", func(t *testing.T) {
		junk := [][]byte{nil, {0}, []byte("n,,n=,r="), []byte("\x00\x00\x00"), []byte(strings.Repeat("\xff", 4096)), []byte("p=,c=biws")}
		for _, m := range []string{sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512} {
			for _, j := range junk {
				c := dialRaw(t, addr)
				if hs := saslHandshake(c, m); hs.ErrorCode != 0 {
					t.Fatalf("handshake %s: %d", m, hs.ErrorCode)
				}
				resp := saslAuthenticate(c, 1, j)
				if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
					t.Errorf("%s, %q: code %d", m, j, resp.ErrorCode)
				}
				c.expectClosed()
			}
		}
		stillServing(t)
	})
	t.Run("SaslHandshake v0 and bare tokens", func(t *testing.T) {
		v0 := func(mech kgosasl.Mechanism) *rawConn {
			c := dialRaw(t, addr)
			req := kmsg.NewPtrSASLHandshakeRequest()
			req.SetVersion(0)
			req.Mechanism = mech.Name()
			if hs := c.roundTrip(req).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != 0 {
				t.Fatalf("handshake v0: code %d", hs.ErrorCode)
			}
			sess, msg, err := mech.Authenticate(ctx, addr)
			if err != nil {
				t.Fatal(err)
			}
			for {
				c.writeRaw(binary.BigEndian.AppendUint32(nil, uint32(len(msg))))
				c.writeRaw(msg)
				token, err := c.readFrame(10 * time.Second)
				if err != nil {
					return c // refused: closed without an answer
				}
				done, next, err := sess.Challenge(token)
				if err != nil {
					t.Fatalf("client refused the server's token: %v", err)
				}
				if done {
					return c
				}
				msg = next
			}
		}
		for _, m := range []kgosasl.Mechanism{mechanism(sasl.Plain, "pat", patSecret), mechanism(sasl.ScramSHA512, "alice", aliceSecret)} {
			c := v0(m)
			if md := c.roundTrip(metadataRequest()).(*kmsg.MetadataResponse); len(md.Brokers) != 1 {
				t.Errorf("%s over v0: metadata %+v", m.Name(), md.Brokers)
			}
		}
		v0(mechanism(sasl.ScramSHA256, "alice", "wrong")).expectClosed()
		stillServing(t)
	})
	t.Run("SaslHandshake on a listener without SASL", func(t *testing.T) {
		c := dialRaw(t, b.ListenerAddr("PLAINTEXT"))
		if hs := saslHandshake(c, sasl.Plain); hs.ErrorCode != kerr.IllegalSaslState.Code {
			t.Errorf("handshake on PLAINTEXT: code %d, want ILLEGAL_SASL_STATE", hs.ErrorCode)
		}
		c.expectClosed()
	})
}

// TestSASLUnauthenticatedTimeout: a connection that does not log in
// within sasl.handshake.timeout.ms is closed; one that did stays open
// past it.
func TestSASLUnauthenticatedTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	b := newSASLBroker(t, func(c *config.Config) { c.SASL.HandshakeTimeout = timeout })
	addr := b.ListenerAddr("SASL_PLAINTEXT")
	idle := dialRaw(t, addr)
	half := dialRaw(t, addr)
	saslHandshake(half, sasl.ScramSHA256)
	authed := dialRaw(t, addr)
	if resp := rawLogin(authed, mechanism(sasl.ScramSHA512, "alice", aliceSecret)); resp.ErrorCode != 0 {
		t.Fatalf("login: %d", resp.ErrorCode)
	}
	start := time.Now()
	idle.expectClosed()
	half.expectClosed()
	if waited := time.Since(start); waited > 4*time.Second {
		t.Errorf("unauthenticated connections closed after %v, timeout %v", waited, timeout)
	}
	for time.Since(start) < 3*timeout {
		if md := authed.roundTrip(metadataRequest()).(*kmsg.MetadataResponse); len(md.Brokers) != 1 {
			t.Fatalf("metadata on the logged-in connection: %+v", md.Brokers)
		}
	}
}

// TestSASLReauthentication: with connections.max.reauth.ms the login
// returns the session lifetime; franz-go re-authenticates and keeps
// working past it; a raw connection that does not is closed on its next
// request; re-authenticating as another user or with another mechanism
// is refused.
func TestSASLReauthentication(t *testing.T) {
	const life = 1500 * time.Millisecond
	b := newSASLBroker(t, func(c *config.Config) {
		for name, sc := range c.SASL.Listeners {
			sc.MaxReauth = life
			c.SASL.Listeners[name] = sc
		}
	})
	b.addScramUser(t, "bob", "bob-secret")
	addr := b.ListenerAddr("SASL_PLAINTEXT")
	ctx := testenv.Context(t, time.Minute)

	c := dialRaw(t, addr)
	if resp := rawLogin(c, mechanism(sasl.ScramSHA256, "alice", aliceSecret)); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != life.Milliseconds() {
		t.Fatalf("login: code %d session_lifetime_ms %d, want %d", resp.ErrorCode, resp.SessionLifetimeMillis, life.Milliseconds())
	}
	// Re-authenticating in time, as the same user, is fine.
	if resp := rawLogin(c, mechanism(sasl.ScramSHA256, "alice", aliceSecret)); resp.ErrorCode != 0 {
		t.Fatalf("re-authentication: code %d", resp.ErrorCode)
	}
	time.Sleep(life + 200*time.Millisecond) // the expiry under test
	c.send(metadataRequest())
	c.expectClosed()

	other := dialRaw(t, addr)
	rawLogin(other, mechanism(sasl.ScramSHA256, "alice", aliceSecret))
	if resp := rawLogin(other, mechanism(sasl.ScramSHA256, "bob", "bob-secret")); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Errorf("re-authentication as bob: code %d, want SASL_AUTHENTICATION_FAILED", resp.ErrorCode)
	}
	other.expectClosed()
	switched := dialRaw(t, addr)
	rawLogin(switched, mechanism(sasl.ScramSHA256, "alice", aliceSecret))
	if hs := saslHandshake(switched, sasl.ScramSHA512); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("re-authentication with another mechanism: code %d, want ILLEGAL_SASL_STATE", hs.ErrorCode)
	}
	switched.expectClosed()

	cl := b.saslClient(t, "SASL_PLAINTEXT", mechanism(sasl.ScramSHA512, "alice", aliceSecret), kgo.AllowAutoTopicCreation())
	deadline := time.Now().Add(3 * life)
	for i := 0; time.Now().Before(deadline); i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "reauth", Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d across re-authentications: %v", i, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// floodLogin runs one failed SCRAM-SHA-256 login as alice: a well-formed
// exchange with a wrong proof. It returns nil if the broker refused it
// with SASL_AUTHENTICATION_FAILED and closed the connection.
func floodLogin(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	corr := int32(0)
	trip := func(req kmsg.Request) (kmsg.Response, error) {
		corr++
		var f kmsg.RequestFormatter
		if _, err := conn.Write(f.AppendRequest(nil, req, corr)); err != nil {
			return nil, err
		}
		var size [4]byte
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			return nil, err
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(conn, body); err != nil {
			return nil, err
		}
		rd := kbin.Reader{Src: body}
		rd.Int32()
		if req.IsFlexible() {
			kmsg.SkipTags(&rd)
		}
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		return resp, resp.ReadFrom(rd.Src)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = sasl.ScramSHA256
	if _, err := trip(hs); err != nil {
		return err
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("n,,n=alice,r=floodnonce")
	resp, err := trip(auth)
	if err != nil {
		return err
	}
	first := string(resp.(*kmsg.SASLAuthenticateResponse).SASLAuthBytes)
	nonce, _, _ := strings.Cut(strings.TrimPrefix(first, "r="), ",")
	proof := make([]byte, 32)
	_, _ = rand.Read(proof)
	auth.SASLAuthBytes = []byte("c=biws,r=" + nonce + ",p=" + base64.StdEncoding.EncodeToString(proof))
	resp, err = trip(auth)
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.SASLAuthenticateResponse).ErrorCode; code != kerr.SaslAuthenticationFailed.Code {
		return fmt.Errorf("code %d, want SASL_AUTHENTICATION_FAILED", code)
	}
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		return errors.New("connection still open after a refused login")
	}
	return nil
}

// TestSASLFailedLoginFlood: 10,000 failed logins in a row neither wedge
// the broker nor flood its log (about a line a second), and a logged-in
// client keeps producing meanwhile.
func TestSASLFailedLoginFlood(t *testing.T) {
	var logs testproc.SyncBuffer
	sb := &saslBroker{files: newTLSFiles(t)}
	cfg := sb.config(t)
	b, err := New(cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(testenv.Context(t, 5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	sb.testBroker = &testBroker{Broker: b, cfg: cfg}
	sb.addScramUser(t, "alice", aliceSecret)
	addr := b.ListenerAddr("SASL_PLAINTEXT")
	ctx := testenv.Context(t, 4*time.Minute)

	good := sb.saslClient(t, "SASL_PLAINTEXT", mechanism(sasl.ScramSHA512, "alice", aliceSecret), kgo.AllowAutoTopicCreation())
	stop := make(chan struct{})
	var produced atomic.Int64
	produceErr := make(chan error, 1)
	go func() {
		defer close(produceErr)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := good.ProduceSync(ctx, &kgo.Record{Topic: "flood", Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
				produceErr <- err
				return
			}
			produced.Add(1)
		}
	}()

	const logins, workers = 10000, 4
	start := time.Now()
	var wg sync.WaitGroup
	var failures atomic.Int64
	firstErr := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range logins / workers {
				if err := floodLogin(addr); err != nil {
					failures.Add(1)
					select {
					case firstErr <- err:
					default:
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	if err := <-produceErr; err != nil {
		t.Fatalf("the logged-in client failed during the flood: %v", err)
	}
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d of %d logins were not refused cleanly; first: %v", n, logins, <-firstErr)
	}
	if produced.Load() == 0 {
		t.Error("the logged-in client produced nothing during the flood")
	}
	lines := strings.Count(logs.String(), "SASL authentication failed")
	if limit := int(elapsed/time.Second) + 2; lines == 0 || lines > limit {
		t.Errorf("%d failed logins in %v logged %d lines, want 1..%d", logins, elapsed, lines, limit)
	}
	if !strings.Contains(logs.String(), "user=alice") || !strings.Contains(logs.String(), "remote=127.0.0.1:") {
		t.Errorf("the failure log does not name the user and address:\n%s", logs.String()[:min(2000, len(logs.String()))])
	}
	// And a new login still works.
	if resp := rawLogin(dialRaw(t, addr), mechanism(sasl.ScramSHA256, "alice", aliceSecret)); resp.ErrorCode != 0 {
		t.Fatalf("login after the flood: code %d", resp.ErrorCode)
	}
	t.Logf("%d failed logins in %v, %d log lines, %d records produced meanwhile", logins, elapsed, lines, produced.Load())
}
