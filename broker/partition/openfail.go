package partition

import (
	"fmt"
	"sync"
	"time"
)

// Back-off of retries to open a partition that failed: doubling from
// openRetryMin up to openRetryMax, so a broker out of descriptors does not
// spin on thousands of partitions.
const (
	openRetryMin = time.Second
	openRetryMax = time.Minute
)

// Key names a partition of one incarnation of a topic.
type Key struct {
	Topic     string
	ID        string // the topic id, so a re-created topic starts afresh
	Partition int32
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

type openFailure struct {
	id       string // topic id of the failed partition
	err      error
	attempts int
	next     time.Time
}

// OpenFailures remembers partitions that failed to open, spaces their
// retries, and tells CreateTopics and auto-creation waiting on a topic
// that it failed, so they answer at once with the cause. Safe for
// concurrent use.
type OpenFailures struct {
	now func() time.Time

	mu       sync.Mutex
	m        map[TopicPartition]*openFailure
	watchers map[string]map[*func(error)]struct{}
}

// NewOpenFailures returns an empty record; now is the clock.
func NewOpenFailures(now func() time.Time) *OpenFailures {
	return &OpenFailures{now: now, m: map[TopicPartition]*openFailure{}, watchers: map[string]map[*func(error)]struct{}{}}
}

// Due reports whether an open of k may be tried now.
func (o *OpenFailures) Due(k Key) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	f := o.m[TopicPartition{k.Topic, k.Partition}]
	return f == nil || f.id != k.ID || !o.now().Before(f.next)
}

// Failed records a failure and tells the topic's watchers.
func (o *OpenFailures) Failed(k Key, err error) time.Duration {
	o.mu.Lock()
	now := o.now()
	tp := TopicPartition{k.Topic, k.Partition}
	f := o.m[tp]
	if f == nil || f.id != k.ID {
		if len(o.m) > 100_000 {
			o.pruneLocked(now)
		}
		f = &openFailure{id: k.ID}
		o.m[tp] = f
	}
	f.attempts++
	wait := openRetryMin << min(f.attempts-1, 6)
	wait = min(wait, openRetryMax)
	f.err, f.next = err, now.Add(wait)
	var notify []func(error)
	for w := range o.watchers[k.Topic] {
		notify = append(notify, *w)
	}
	o.mu.Unlock()
	werr := fmt.Errorf("%w: %s-%d: %w", ErrOpen, k.Topic, k.Partition, err)
	for _, w := range notify {
		w(werr)
	}
	return wait
}

// Succeeded forgets the failures of k: it opened.
func (o *OpenFailures) Succeeded(k Key) {
	o.mu.Lock()
	if f := o.m[TopicPartition{k.Topic, k.Partition}]; f != nil && f.id == k.ID {
		delete(o.m, TopicPartition{k.Topic, k.Partition})
	}
	o.mu.Unlock()
}

// LastError returns why the partition last failed to open, if it did and
// is still not open (for Produce and Fetch to name the cause).
func (o *OpenFailures) LastError(topic string, p int32) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f := o.m[TopicPartition{topic, p}]; f != nil {
		return f.err
	}
	return nil
}

// pruneLocked drops failures of topics that are likely gone (not retried
// for ten back-off periods).
func (o *OpenFailures) pruneLocked(now time.Time) {
	for k, f := range o.m {
		if now.Sub(f.next) > 10*openRetryMax {
			delete(o.m, k)
		}
	}
}

// Watch calls fn with the error of every failure of topic until stop.
func (o *OpenFailures) Watch(topic string, fn func(error)) (stop func()) {
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
