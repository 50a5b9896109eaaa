package broker

import (
	"sync"
	"time"
)

// throttle.go is Kafka's replication throttle: the topic configs
// leader.replication.throttled.replicas and
// follower.replication.throttled.replicas name replicas
// ("partition:broker,..." or "*"), and the dynamic broker configs
// leader.replication.throttled.rate and follower.replication.throttled.rate
// bound, in bytes/s over all of a broker's throttled partitions, what a
// leader sends to their out-of-sync followers and what a follower copies
// for them. In-sync replicas are never throttled, as in Kafka: a throttle
// slows a reassignment's catch-up, never acks=all produces.

// rateBucket is a token bucket of bytes, refilled at rate per second up to
// one second's worth. Usage is recorded after the fact, so the level may
// go negative: a caller holds back while it is in debt, as Kafka's quota
// does once it is exceeded.
type rateBucket struct {
	rate  float64 // bytes/s; 0 = unlimited
	level float64
	at    time.Time
}

func (q *rateBucket) refill(now time.Time) {
	q.level = min(q.rate, q.level+now.Sub(q.at).Seconds()*q.rate)
	q.at = now
}

// replicationThrottle holds a broker's leader and follower buckets. Safe
// for concurrent use.
type replicationThrottle struct {
	now              func() time.Time
	mu               sync.Mutex
	leader, follower rateBucket
}

func newReplicationThrottle(now func() time.Time) *replicationThrottle {
	return &replicationThrottle{now: now}
}

// setRates applies new rates (0 = unlimited); a changed rate starts with a
// full bucket.
func (t *replicationThrottle) setRates(leader, follower int64) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, x := range []struct {
		q    *rateBucket
		rate int64
	}{{&t.leader, leader}, {&t.follower, follower}} {
		if x.q.rate != float64(x.rate) {
			*x.q = rateBucket{rate: float64(x.rate), level: float64(x.rate), at: now}
		}
	}
}

// allowance returns how many bytes the bucket lets through now: -1 when
// unlimited, 0 while it is in debt.
func (t *replicationThrottle) allowance(leader bool) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.bucket(leader)
	if q.rate <= 0 {
		return -1
	}
	q.refill(t.now())
	return int64(max(q.level, 0))
}

// wait returns how long until the bucket is out of debt.
func (t *replicationThrottle) wait(leader bool) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.bucket(leader)
	if q.rate <= 0 {
		return 0
	}
	q.refill(t.now())
	if q.level > 0 {
		return 0
	}
	return time.Duration((1 - q.level) / q.rate * float64(time.Second))
}

// record charges n bytes of throttled replication.
func (t *replicationThrottle) record(leader bool, n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.bucket(leader)
	if q.rate <= 0 || n <= 0 {
		return
	}
	q.refill(t.now())
	q.level -= float64(n)
}

func (t *replicationThrottle) bucket(leader bool) *rateBucket {
	if leader {
		return &t.leader
	}
	return &t.follower
}
