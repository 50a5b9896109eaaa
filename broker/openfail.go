package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/partlog"
)

// errPartitionOpen marks a topic whose partition this broker leads but
// cannot open (out of file descriptors, a disk error). The topic exists;
// the broker retries with back-off, so it comes online once the cause goes.
var errPartitionOpen = errors.New("broker: partition cannot be opened")

// Back-off of retries to open a partition that failed: doubling from
// openRetryMin up to openRetryMax, so a broker out of descriptors does not
// spin on thousands of partitions.
const (
	openRetryMin = time.Second
	openRetryMax = time.Minute
)

type partKey struct {
	topic, id string // id: the topic id, so a re-created topic starts afresh
	p         int32
}

type topicPart struct {
	topic string
	p     int32
}

type openFailure struct {
	id       string // topic id of the failed partition
	err      error
	attempts int
	next     time.Time
}

// openFailures remembers partitions that failed to open, spaces their
// retries, and tells CreateTopics and auto-creation waiting on a topic
// that it failed, so they answer at once with the cause. Safe for
// concurrent use.
type openFailures struct {
	now func() time.Time

	mu       sync.Mutex
	m        map[topicPart]*openFailure
	watchers map[string]map[*func(error)]struct{}
}

func newOpenFailures(now func() time.Time) *openFailures {
	return &openFailures{now: now, m: map[topicPart]*openFailure{}, watchers: map[string]map[*func(error)]struct{}{}}
}

// due reports whether an open of k may be tried now.
func (o *openFailures) due(k partKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	f := o.m[topicPart{k.topic, k.p}]
	return f == nil || f.id != k.id || !o.now().Before(f.next)
}

// failed records a failure and tells the topic's watchers.
func (o *openFailures) failed(k partKey, err error) time.Duration {
	o.mu.Lock()
	now := o.now()
	tp := topicPart{k.topic, k.p}
	f := o.m[tp]
	if f == nil || f.id != k.id {
		if len(o.m) > 100_000 {
			o.pruneLocked(now)
		}
		f = &openFailure{id: k.id}
		o.m[tp] = f
	}
	f.attempts++
	wait := openRetryMin << min(f.attempts-1, 6)
	wait = min(wait, openRetryMax)
	f.err, f.next = err, now.Add(wait)
	var notify []func(error)
	for w := range o.watchers[k.topic] {
		notify = append(notify, *w)
	}
	o.mu.Unlock()
	werr := fmt.Errorf("%w: %s-%d: %w", errPartitionOpen, k.topic, k.p, err)
	for _, w := range notify {
		w(werr)
	}
	return wait
}

func (o *openFailures) succeeded(k partKey) {
	o.mu.Lock()
	if f := o.m[topicPart{k.topic, k.p}]; f != nil && f.id == k.id {
		delete(o.m, topicPart{k.topic, k.p})
	}
	o.mu.Unlock()
}

// lastError returns why the partition last failed to open, if it did and
// is still not open (for Produce and Fetch to name the cause).
func (o *openFailures) lastError(topic string, p int32) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f := o.m[topicPart{topic, p}]; f != nil {
		return f.err
	}
	return nil
}

// pruneLocked drops failures of topics that are likely gone (not retried
// for ten back-off periods).
func (o *openFailures) pruneLocked(now time.Time) {
	for k, f := range o.m {
		if now.Sub(f.next) > 10*openRetryMax {
			delete(o.m, k)
		}
	}
}

// watch calls fn with the error of every failure of topic until stop.
func (o *openFailures) watch(topic string, fn func(error)) (stop func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.watchers[topic] == nil {
		o.watchers[topic] = map[*func(error)]struct{}{}
	}
	key := &fn
	o.watchers[topic][key] = struct{}{}
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.watchers[topic], key)
		if len(o.watchers[topic]) == 0 {
			delete(o.watchers, topic)
		}
	}
}

// partitionOpenFailed is the reconciler's report of a failed open: counted,
// logged at most once a second (with how many were suppressed), retried
// after a back-off, and told to whoever waits for the topic.
func (b *Broker) partitionOpenFailed(k partKey, err error) {
	b.res.openFailed.Inc()
	wait := b.res.failures.failed(k, err)
	kind := "open-failed"
	if errors.Is(err, partlog.ErrNoDescriptors) {
		kind = "open-failed-descriptors"
	}
	b.res.logs.log(slog.LevelError, kind, "opening a led partition failed; retrying with back-off",
		"topic", k.topic, "partition", k.p, "retry_in", wait, "err", err)
}

// createTopicReported is createTopic that returns as soon as one of the
// topic's partitions on this broker fails to open, with the cause, rather
// than wait out the timeout.
func (b *Broker) createTopicReported(ctx context.Context, name string, n int32, rf int16, overrides map[string]string, existingOK bool) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := b.res.failures.watch(name, func(err error) { cancel(err) })
	defer stop()
	err := b.createTopic(ctx, name, n, rf, overrides, existingOK)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, errPartitionOpen) {
		return cause
	}
	return err
}

// leads reports whether snap makes this broker the partition's leader, or
// would: a new partition's replicas open it as soon as its assignment is
// known, before the controller's partition state names a leader, so an open
// that failed then is reported by the replica that will lead (the first).
func (b *Broker) leads(snap cluster.Snapshot, topic string, p int32) bool {
	cp, ok := snap.Partition(topic, p)
	if !ok {
		return false
	}
	if cp.Leader < 0 {
		return len(cp.Replicas) > 0 && cp.Replicas[0] == b.cfg.BrokerID
	}
	return cp.Leader == b.cfg.BrokerID
}
