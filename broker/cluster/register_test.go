package cluster

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRestartWaitsForOwnStaleRegistration: a broker killed without closing
// its session and restarted at once finds /brokers/ids/<id> with its own
// endpoints; it waits for that session to expire and then registers.
func TestRestartWaitsForOwnStaleRegistration(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		old := e.join(t, 1)
		old.halt() // killed: its session, and registration, live on
		cfg := e.config(1)
		waiting := make(chan struct{})
		cfg.Logger = slog.New(newSignalHandler(cfg.Logger.Handler(), "waiting for that session to expire", waiting))
		type result struct {
			m   *Member
			err error
		}
		done := make(chan result, 1)
		ctx := ctxFor(t)
		go func() {
			m, err := Join(ctx, e.factory, cfg)
			done <- result{m, err}
		}()
		select {
		case <-waiting:
		case r := <-done:
			t.Fatalf("join returned before the stale registration went: %v", r.err)
		case <-time.After(waitTimeout):
			t.Fatal("join does not wait for its stale registration")
		}
		e.expireFn(t, old.session)
		var r result
		select {
		case r = <-done:
		case <-time.After(waitTimeout):
			t.Fatal("join still waiting after the stale session expired")
		}
		must(t, r.err)
		t.Cleanup(func() { _ = r.m.Close() })
		if _, st := e.get(t, brokerPath(1)); st.EphemeralOwner != r.m.session.ID() {
			t.Errorf("registration owner 0x%x, want the new session 0x%x", st.EphemeralOwner, r.m.session.ID())
		}
		await(t, r.m, "broker 1 registered and controller", func(s Snapshot) bool {
			return len(s.Brokers) == 1 && s.Brokers[0].Port == 9001 && s.Controller == 1
		})
	})
}

// TestStaleRegistrationWaitIsBounded: a registration with this broker's
// endpoints that outlives the session timeout plus the slack belongs to a
// live twin after all; Join gives up then. (memcoord only: the bound is
// the same code on ZooKeeper, and takes the slack to run out.)
func TestStaleRegistrationWaitIsBounded(t *testing.T) {
	e := newEnv(t, backends[0])
	e.join(t, 1)
	cfg := e.config(1)
	cfg.SessionTimeout = time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	start := time.Now()
	_, err := Join(ctx, e.factory, cfg)
	took := time.Since(start)
	wantErr(t, err, ErrBrokerIDRegistered, "join while a twin with the same endpoints lives")
	if !strings.Contains(err.Error(), "still live after") {
		t.Errorf("message: %v", err)
	}
	if took < cfg.staleWait() {
		t.Errorf("gave up after %v, before the bound %v", took, cfg.staleWait())
	}
}

// signalHandler closes ch at the first record whose message contains on.
// Handlers derived with WithAttrs share ch.
type signalHandler struct {
	slog.Handler
	on   string
	ch   chan struct{}
	once *sync.Once
}

func newSignalHandler(h slog.Handler, on string, ch chan struct{}) *signalHandler {
	return &signalHandler{Handler: h, on: on, ch: ch, once: new(sync.Once)}
}

func (h *signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.on) {
		h.once.Do(func() { close(h.ch) })
	}
	return h.Handler.Handle(ctx, r)
}

func (h *signalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &signalHandler{Handler: h.Handler.WithAttrs(attrs), on: h.on, ch: h.ch, once: h.once}
}

func (h *signalHandler) WithGroup(name string) slog.Handler {
	return &signalHandler{Handler: h.Handler.WithGroup(name), on: h.on, ch: h.ch, once: h.once}
}
