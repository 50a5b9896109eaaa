package audit

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Publisher delivers audit events. Publish returns once every event is
// acknowledged, or with an error; on error some events may have been
// delivered, which is why a retry must carry the same IDs.
type Publisher interface {
	Publish(ctx context.Context, events []Event) error
}

// kafkaPublisher produces events to an audit topic through a kgo client.
type kafkaPublisher struct {
	cl    *kgo.Client
	topic string

	mu      sync.Mutex
	ensured bool
}

// NewKafkaPublisher returns a Publisher that produces to topic ("" means
// DefaultTopic) through cl. It creates nothing itself: on first use it asks
// for the topic's metadata with auto-creation allowed, so that a broker with
// auto.create.topics.enable creates it (a Tributary broker replicated, see
// the package doc); otherwise the topic must exist. The
// caller keeps ownership of cl (and closes it after the Counter).
func NewKafkaPublisher(cl *kgo.Client, topic string) Publisher {
	if topic == "" {
		topic = DefaultTopic
	}
	return &kafkaPublisher{cl: cl, topic: topic}
}

func (p *kafkaPublisher) Publish(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	p.ensureTopic(ctx)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, e := range events {
		v, err := MarshalEvent(e)
		if err != nil {
			return err
		}
		wg.Add(1)
		p.cl.Produce(ctx, &kgo.Record{Topic: p.topic, Key: []byte(e.Instance), Value: v},
			func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
				wg.Done()
			})
	}
	// kgo fails a buffered record on ctx only when that is safe (an
	// idempotent producer's sent request may yet land), so the wait is
	// bounded here too: the caller re-sends unconfirmed events, and the
	// audit service drops the duplicates by ID.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("audit: publish %d events: %w", len(events), ctx.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		return fmt.Errorf("audit: publish %d of %d events failed: %w", len(errs), len(events), errors.Join(errs[0]))
	}
	return nil
}

// ensureTopic asks once for the audit topic with auto-creation allowed; a
// failure is not fatal here (the produce that follows reports it).
func (p *kafkaPublisher) ensureTopic(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ensured {
		return
	}
	if EnsureTopic(ctx, p.cl, p.topic) == nil {
		p.ensured = true
	}
}

// EnsureTopic sends a Metadata request for topic with auto-creation
// allowed and reports whether the topic exists afterwards.
func EnsureTopic(ctx context.Context, cl *kgo.Client, topic string) error {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		if t.Topic != nil && *t.Topic == topic && t.ErrorCode == 0 && len(t.Partitions) > 0 {
			return nil
		}
	}
	return fmt.Errorf("audit: topic %s not available yet", topic)
}
