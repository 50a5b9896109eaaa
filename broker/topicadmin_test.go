package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestCreateTopicSurvivesLostAnswer: a topic creation whose coordination
// write gets no answer (a ZooKeeper leader election cuts the connection:
// coord.ErrUnavailable, outcome unknown) is tried again by the broker. A
// write that took effect is recognised by its topic id and succeeds; one
// that did not is written again; another creator's topic of the same name
// is still TOPIC_ALREADY_EXISTS. (TestEnsembleMemberDown got
// REQUEST_TIMED_OUT from CreateTopics during the election before.)
func TestCreateTopicSurvivesLostAnswer(t *testing.T) {
	srv := memcoord.NewServer()
	var mu sync.Mutex
	lose := map[string]bool{} // topic -> apply the write (true) or not, then lose the answer
	connect := WithCoordinator(func(context.Context) (coord.Session, error) {
		return &lossySession{Session: srv.Connect(memcoord.Config{}), mu: &mu, lose: lose}, nil
	})
	b := newTestBroker(t, func(c *config.Config) { c.BrokerID = 1 }, connect)
	ctx := testenv.Context(t, time.Minute)
	for _, applied := range []bool{true, false} {
		name := fmt.Sprintf("applied-%v", applied)
		mu.Lock()
		lose[name] = applied
		mu.Unlock()
		if err := b.CreateTopic(ctx, name, 2); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		mu.Lock()
		_, pending := lose[name]
		mu.Unlock()
		if pending {
			t.Fatalf("%s: the lossy write never happened", name)
		}
		if b.partitions.Leader(name, 0) == nil || b.partitions.Leader(name, 1) == nil {
			t.Fatalf("%s: not served", name)
		}
	}
	// A topic that exists before any lost answer stays someone else's.
	mu.Lock()
	lose["applied-true"] = false
	mu.Unlock()
	if err := b.CreateTopic(ctx, "applied-true", 2); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("re-creating an existing topic after a lost answer: %v, want ErrTopicExists", err)
	}
}

// lossySession loses the answer to the first Multi creating a topic named
// in lose, after applying it or not.
type lossySession struct {
	coord.Session
	mu   *sync.Mutex
	lose map[string]bool
}

func (s *lossySession) Multi(ctx context.Context, ops ...coord.Op) error {
	for _, op := range ops {
		name, ok := strings.CutPrefix(op.Path, "/brokers/topics/")
		if op.Kind != coord.OpCreate || !ok || strings.Contains(name, "/") {
			continue
		}
		s.mu.Lock()
		apply, lossy := s.lose[name]
		delete(s.lose, name)
		s.mu.Unlock()
		if !lossy {
			break
		}
		if apply {
			if err := s.Session.Multi(ctx, ops...); err != nil {
				return err
			}
		}
		return fmt.Errorf("test: connection lost, outcome unknown: %w", coord.ErrUnavailable)
	}
	return s.Session.Multi(ctx, ops...)
}
