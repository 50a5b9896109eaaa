package broker

import (
	"math"
	"sync"
	"time"
)

// mutationQuota is KIP-599's controller mutation quota with a broker-wide
// rate (controller.mutation.rate): each client id may create (or delete)
// partitions at rate per second on average, with a burst of rate x window.
// A request that would go over is refused with THROTTLING_QUOTA_EXCEEDED
// and the time until it would fit, as Kafka does for CreateTopics v6+
// (older versions get the error without the hint; Kafka then holds the
// response instead, which a flood of requests only waits out). Safe for
// concurrent use.
//
// A controller_mutation_rate client quota (broker/quota) replaces the
// broker-wide rate for the requests it matches: takeAt charges the
// quota's usage key at its rate.
type mutationQuota struct {
	rate   float64 // partitions per second; 0 = unlimited
	window time.Duration
	now    func() time.Time
	mu     sync.Mutex
	tokens map[string]*bucket
}

type bucket struct {
	level float64 // partitions that may still be created now
	at    time.Time
	rate  float64 // the rate it was filled at
}

func newMutationQuota(rate float64, window time.Duration, now func() time.Time) *mutationQuota {
	return &mutationQuota{rate: rate, window: window, now: now, tokens: map[string]*bucket{}}
}

// maxQuotaClients bounds the buckets remembered; full buckets are dropped
// first, as they carry no state.
const maxQuotaClients = 10000

// take asks for n partitions for client under the broker-wide rate. It
// returns 0 if granted, else how long the client should wait before
// asking again. Like Kafka's strict quota, a request is granted while the
// bucket is not in debt, even if it goes below zero (so one large topic is
// possible), and refused while it is.
func (q *mutationQuota) take(client string, n int) time.Duration {
	return q.takeAt(client, q.rate, n)
}

// takeAt is take for the bucket named key at rate (0 = unlimited); a
// bucket whose rate changed starts full at the new rate.
func (q *mutationQuota) takeAt(key string, rate float64, n int) time.Duration {
	if rate <= 0 || n <= 0 {
		return 0
	}
	burst := rate * q.window.Seconds()
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.tokens[key]
	if b == nil || b.rate != rate {
		if b == nil && len(q.tokens) >= maxQuotaClients {
			q.pruneLocked(now)
		}
		b = &bucket{level: burst, at: now, rate: rate}
		q.tokens[key] = b
	}
	b.level = math.Min(burst, b.level+now.Sub(b.at).Seconds()*rate)
	b.at = now
	if b.level < 0 {
		return time.Duration(-b.level/rate*float64(time.Second)).Round(time.Millisecond) + time.Millisecond
	}
	b.level -= float64(n)
	return 0
}

func (q *mutationQuota) pruneLocked(now time.Time) {
	for c, b := range q.tokens {
		if b.level+now.Sub(b.at).Seconds()*b.rate >= b.rate*q.window.Seconds() {
			delete(q.tokens, c)
		}
	}
	if len(q.tokens) >= maxQuotaClients {
		clear(q.tokens)
	}
}
