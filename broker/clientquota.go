package broker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/quota"
	"github.com/tributary/tributary/internal/coord"
)

// clientquota.go enforces Kafka's client quotas (broker/quota) as Kafka
// does: Produce is charged its request bytes (producer_byte_rate), a
// consumer's Fetch its response's record bytes (consumer_byte_rate), and
// every request but ApiVersions, the SASL exchange and replica fetches its
// handler time (request_percentage, excluding a Fetch's long-poll wait).
// A request that takes its usage over the quota is answered at once with
// throttle_time_ms, and its connection is then muted (neither read from
// nor served) for that time (KIP-219); a client of a version from before
// KIP-219 gets its response only after the throttle time, which is how
// those clients learned to slow down. A throttled Fetch is answered without
// records (its bytes are not charged), so a consumer slows down rather than
// failing; its size is also capped at one window's worth of its quota.
// Replica fetches are never charged.

// clientQuotas is the broker's store of client quotas, a meter per
// measured key and the throttle metrics per quota entity.
type clientQuotas struct {
	store                   *quota.Store
	produce, fetch, request *quota.Meter
	now                     func() time.Time

	throttleTime *prometheus.CounterVec
	throttled    *prometheus.CounterVec
	rate         *prometheus.GaugeVec
}

// quotaLabels are the throttle metrics' labels: the quota ("produce",
// "fetch", "request") and Kafka's quota metric tags.
var quotaLabels = []string{"quota", "user", "client_id"}

func newClientQuotas(lc config.Limits, reg prometheus.Registerer) (*clientQuotas, error) {
	lc = lc.WithDefaults()
	w := quota.Window{Num: lc.QuotaWindowNum, Size: lc.QuotaWindowSize}
	q := &clientQuotas{
		produce: quota.NewMeter(w), fetch: quota.NewMeter(w), request: quota.NewMeter(w),
		now: time.Now,
		throttleTime: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "quota_throttle_seconds_total",
			Help: "Time clients were throttled for, by quota and quota entity (Kafka's throttle-time).",
		}, quotaLabels),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "quota_throttled_responses_total",
			Help: "Responses that carried a throttle time, by quota and quota entity.",
		}, quotaLabels),
		rate: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "quota_usage_rate",
			Help: "Measured usage of quota entities with a quota: bytes/s for produce and fetch, percent of a thread for request (Kafka's byte-rate, request-time).",
		}, quotaLabels),
	}
	for _, c := range []prometheus.Collector{q.throttleTime, q.throttled, q.rate} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// quotaSyncTimeout bounds the wait for the first load of the quotas.
const quotaSyncTimeout = time.Minute

// startClientQuotas starts the quota store and waits for its first load,
// so that the first requests see the stored quotas. It runs after the
// broker joined its coordination service.
func (b *Broker) startClientQuotas(ctx context.Context) error {
	q := b.quotas
	q.store = quota.NewStore(b.shutdownCtx, func(ctx context.Context) (coord.Session, error) {
		return b.connect(ctx)
	}, b.logger.With("component", "client-quotas"))
	go func() {
		<-b.done
		_ = q.store.Close()
	}()
	ctx, cancel := context.WithTimeout(ctx, quotaSyncTimeout)
	defer cancel()
	select {
	case <-q.store.Synced():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("broker: loading the client quotas: %w", ctx.Err())
	}
}

// ClientQuotas returns the broker's quota store (nil before Start); for
// tests and tools.
func (b *Broker) ClientQuotas() *quota.Store { return b.quotas.store }

// quotaIdentity is who a request is charged to: the principal's name
// (ANONYMOUS without a login) and the client id.
func quotaIdentity(r *request) (user, client string) {
	user = strings.TrimPrefix(requestPrincipal(r), "User:")
	if r.clientID != nil {
		client = *r.clientID
	}
	return user, client
}

// meter is the meter and metric label of a measured key.
func (q *clientQuotas) meter(key string) (*quota.Meter, string) {
	switch key {
	case quota.ProducerByteRate:
		return q.produce, "produce"
	case quota.ConsumerByteRate:
		return q.fetch, "fetch"
	}
	return q.request, "request"
}

// limit is r's quota of key (quota.Store.Limit).
func (q *clientQuotas) limit(r *request, key string) (float64, quota.Tags, bool) {
	if q.store == nil || !q.store.Any() {
		return 0, quota.Tags{}, false
	}
	user, client := quotaIdentity(r)
	return q.store.Limit(key, user, client)
}

// charge records v of key for r and returns the throttle time; 0 without
// a quota (nothing is measured then).
func (q *clientQuotas) charge(r *request, key string, v float64) time.Duration {
	limit, tags, ok := q.limit(r, key)
	if !ok {
		return 0
	}
	m, name := q.meter(key)
	observed, t := m.Record(tags, limit, v, q.now())
	q.rate.WithLabelValues(name, tags.User, tags.Client).Set(observed)
	return t
}

// uncharge takes back a charge whose response was not sent (a throttled
// Fetch answered empty).
func (q *clientQuotas) uncharge(r *request, key string, v float64) {
	if _, tags, ok := q.limit(r, key); ok {
		m, _ := q.meter(key)
		m.Unrecord(tags, v, q.now())
	}
}

// observeThrottle counts a throttle in the metrics of key's entity.
func (q *clientQuotas) observeThrottle(r *request, key string, t time.Duration) {
	if _, tags, ok := q.limit(r, key); ok {
		_, name := q.meter(key)
		q.throttleTime.WithLabelValues(name, tags.User, tags.Client).Add(t.Seconds())
		q.throttled.WithLabelValues(name, tags.User, tags.Client).Inc()
	}
}

// fetchCap is the most a consumer's Fetch may return: one quota window of
// its consumer_byte_rate (Kafka's getMaxValueInQuotaWindow); -1 without a
// quota.
func (q *clientQuotas) fetchCap(r *request) int64 {
	limit, _, ok := q.limit(r, quota.ConsumerByteRate)
	if !ok {
		return -1
	}
	return max(int64(limit*q.fetch.Window().Size.Seconds()), 1)
}

// requestQuotaExempt are the APIs not charged to request_percentage, as in
// Kafka: what a client must send before it can be throttled.
func requestQuotaExempt(r *request) bool {
	switch kmsg.Key(r.key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return true
	case kmsg.Fetch:
		return r.msg.(*kmsg.FetchRequest).ReplicaID >= 0
	}
	return false
}

// replyResponse is the kmsg response of a reply, nil if it has none.
func replyResponse(rep reply) kmsg.Response {
	switch x := rep.(type) {
	case kmsgReply:
		return x.resp
	case *fetchReply:
		return x.resp
	}
	return nil
}

// applyThrottle charges r's handler time to request_percentage and sets
// the larger of that throttle and the handler's (r.throttle) on the
// response. It returns the throttle and whether the client throttles
// itself after the response (KIP-219); if not, the response must wait.
func (b *Broker) applyThrottle(r *request, rep reply, busy time.Duration) (time.Duration, bool) {
	if !requestQuotaExempt(r) {
		if t := b.quotas.charge(r, quota.RequestPercentage, busy.Seconds()*100); t > 0 {
			b.quotas.observeThrottle(r, quota.RequestPercentage, t)
			r.throttle = max(r.throttle, t)
		}
	}
	if r.throttle <= 0 {
		return 0, true
	}
	tr, ok := replyResponse(rep).(kmsg.ThrottleResponse)
	if !ok {
		return r.throttle, false
	}
	ms := int32(min(r.throttle.Milliseconds(), 1<<31-1))
	if cur, _ := tr.Throttle(); ms > cur {
		if st, ok := tr.(kmsg.SetThrottleResponse); ok {
			st.SetThrottle(ms)
		}
	}
	_, clientThrottles := tr.Throttle()
	return r.throttle, clientThrottles
}

// throttleProduce charges a Produce's request bytes.
func (b *Broker) throttleProduce(r *request) {
	if t := b.quotas.charge(r, quota.ProducerByteRate, float64(r.frameSize)); t > 0 {
		b.quotas.observeThrottle(r, quota.ProducerByteRate, t)
		r.throttle = max(r.throttle, t)
	}
}

// throttleFetch charges a consumer's Fetch response's record bytes; when
// that throttles it, the response goes without records and the bytes are
// not charged, as Kafka does.
func (b *Broker) throttleFetch(r *request, rep *fetchReply) {
	if rep.resp.Version < 1 || r.msg.(*kmsg.FetchRequest).ReplicaID >= 0 {
		return
	}
	var n int64
	for _, s := range rep.slots {
		n += s.view.Len()
	}
	t := b.quotas.charge(r, quota.ConsumerByteRate, float64(n))
	if t <= 0 {
		return
	}
	b.quotas.observeThrottle(r, quota.ConsumerByteRate, t)
	r.throttle = max(r.throttle, t)
	if n > 0 {
		b.quotas.uncharge(r, quota.ConsumerByteRate, float64(n))
		rep.release()
	}
}

// waitMuted waits until c is no longer muted, or ctx ends.
func (c *connection) waitMuted(ctx context.Context) {
	until := c.mutedUntil.Load()
	if until == 0 {
		return
	}
	d := time.Until(time.Unix(0, until))
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// mute keeps c from being read or served for d (KIP-219).
func (c *connection) mute(d time.Duration) {
	c.mutedUntil.Store(time.Now().Add(d).UnixNano())
}
