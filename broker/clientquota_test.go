package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/quota"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// quotaEntity builds an AlterClientQuotas entity: pairs of type and name
// ("" for the default, which is a null name on the wire).
func quotaEntity(pairs ...string) []kmsg.AlterClientQuotasRequestEntryEntity {
	var out []kmsg.AlterClientQuotasRequestEntryEntity
	for i := 0; i+1 < len(pairs); i += 2 {
		e := kmsg.NewAlterClientQuotasRequestEntryEntity()
		e.Type = pairs[i]
		if pairs[i+1] != "" {
			e.Name = kmsg.StringPtr(pairs[i+1])
		}
		out = append(out, e)
	}
	return out
}

func quotaOp(key string, v float64, remove bool) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = key, v, remove
	return op
}

// alterQuotas sends one AlterClientQuotas and returns each entry's code.
func alterQuotas(t *testing.T, ctx context.Context, cl *kgo.Client, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) []int16 {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries, req.ValidateOnly = entries, validateOnly
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("AlterClientQuotas: %v", err)
	}
	var codes []int16
	for _, e := range resp.Entries {
		codes = append(codes, e.ErrorCode)
	}
	return codes
}

func quotaEntry(entity []kmsg.AlterClientQuotasRequestEntryEntity, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity, e.Ops = entity, ops
	return e
}

// describeQuotas returns DescribeClientQuotas' entries as
// "type=name,..." → key → value (a default name printed as <default>).
func describeQuotas(t *testing.T, ctx context.Context, cl *kgo.Client, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) (map[string]map[string]float64, int16) {
	t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Components, req.Strict = comps, strict
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DescribeClientQuotas: %v", err)
	}
	out := map[string]map[string]float64{}
	for _, e := range resp.Entries {
		key := ""
		for _, p := range e.Entity {
			name := "<default>"
			if p.Name != nil {
				name = *p.Name
			}
			if key != "" {
				key += ","
			}
			key += p.Type + "=" + name
		}
		out[key] = map[string]float64{}
		for _, v := range e.Values {
			out[key][v.Key] = v.Value
		}
	}
	return out, resp.ErrorCode
}

func quotaComponent(typ string, match kmsg.QuotasMatchType, name string) kmsg.DescribeClientQuotasRequestComponent {
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType = typ, match
	if match == kmsg.QuotasMatchTypeExact {
		c.Match = kmsg.StringPtr(name)
	}
	return c
}

// TestClientQuotaRequests: AlterClientQuotas and DescribeClientQuotas
// with raw kmsg requests: the bad cases get Kafka's codes and change
// nothing, validate_only writes nothing, and Describe's match types and
// strict filter select as Kafka's do.
func TestClientQuotaRequests(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := testenv.Context(t, 2*time.Minute)
	cl := newClient(t, b.ListenerAddr("PLAINTEXT"))
	invalid := kerr.InvalidRequest.Code
	user, client := quotaEntityUser, quotaEntityClient

	if got := alterQuotas(t, ctx, cl, false,
		quotaEntry(quotaEntity(client, "loader"), quotaOp(quota.ProducerByteRate, 1048576, false), quotaOp(quota.ConsumerByteRate, 2097152, false)),
		quotaEntry(quotaEntity(user, "alice", client, ""), quotaOp(quota.RequestPercentage, 12.5, false)),
		quotaEntry(quotaEntity(user, ""), quotaOp(quota.ControllerMutationRate, 10, false)),
	); len(got) != 3 || got[0] != 0 || got[1] != 0 || got[2] != 0 {
		t.Fatalf("valid alterations: codes %v", got)
	}
	want := map[string]map[string]float64{
		"client-id=loader":               {quota.ProducerByteRate: 1048576, quota.ConsumerByteRate: 2097152},
		"user=alice,client-id=<default>": {quota.RequestPercentage: 12.5},
		"user=<default>":                 {quota.ControllerMutationRate: 10},
	}
	check := func(what string) {
		t.Helper()
		got, code := describeQuotas(t, ctx, cl, false)
		if code != 0 || len(got) != len(want) {
			t.Fatalf("%s: describe all: code %d, %v; want %v", what, code, got, want)
		}
		for k, vs := range want {
			for key, v := range vs {
				if got[k][key] != v || len(got[k]) != len(vs) {
					t.Fatalf("%s: describe all: %v; want %v", what, got, want)
				}
			}
		}
	}
	check("after the valid alterations")

	for _, tc := range []struct {
		name  string
		entry kmsg.AlterClientQuotasRequestEntry
		code  int16
	}{
		{"negative rate", quotaEntry(quotaEntity(client, "loader"), quotaOp(quota.ProducerByteRate, -1, false)), invalid},
		{"fractional byte rate", quotaEntry(quotaEntity(client, "loader"), quotaOp(quota.ConsumerByteRate, 1.5, false)), invalid},
		{"unknown key", quotaEntry(quotaEntity(client, "loader"), quotaOp("producer_byte_rat", 1, false)), invalid},
		{"unknown key removed", quotaEntry(quotaEntity(client, "loader"), quotaOp("bogus", 0, true)), invalid},
		{"bad entity type", quotaEntry(quotaEntity("group", "g"), quotaOp(quota.ProducerByteRate, 1, false)), invalid},
		{"ip entity", quotaEntry(quotaEntity(quotaEntityIP, "10.0.0.1"), quotaOp("connection_creation_rate", 1, false)), invalid},
		{"type twice", quotaEntry(quotaEntity(client, "a", client, "b"), quotaOp(quota.ProducerByteRate, 1, false)), invalid},
		{"no entity", quotaEntry(nil, quotaOp(quota.ProducerByteRate, 1, false)), invalid},
		// One bad op fails the whole entry: the good one is not applied.
		{"good and bad op", quotaEntry(quotaEntity(client, "loader"), quotaOp(quota.ProducerByteRate, 5, false), quotaOp(quota.RequestPercentage, -5, false)), invalid},
	} {
		if got := alterQuotas(t, ctx, cl, false, tc.entry); len(got) != 1 || got[0] != tc.code {
			t.Errorf("%s: codes %v, want [%d]", tc.name, got, tc.code)
		}
	}
	check("after the refused alterations")

	// validate_only: a valid change is accepted and not written, a bad one
	// refused.
	if got := alterQuotas(t, ctx, cl, true,
		quotaEntry(quotaEntity(client, "loader"), quotaOp(quota.ProducerByteRate, 7, false)),
		quotaEntry(quotaEntity(client, "loader"), quotaOp(quota.ProducerByteRate, -7, false)),
	); len(got) != 2 || got[0] != 0 || got[1] != invalid {
		t.Errorf("validate_only: codes %v, want [0 %d]", got, invalid)
	}
	check("after validate_only")

	// Describe's filters.
	for _, tc := range []struct {
		name   string
		strict bool
		comps  []kmsg.DescribeClientQuotasRequestComponent
		want   []string
	}{
		{"exact client", false, []kmsg.DescribeClientQuotasRequestComponent{quotaComponent(client, kmsg.QuotasMatchTypeExact, "loader")}, []string{"client-id=loader"}},
		{"default client, not strict", false, []kmsg.DescribeClientQuotasRequestComponent{quotaComponent(client, kmsg.QuotasMatchTypeDefault, "")}, []string{"user=alice,client-id=<default>"}},
		{"default client, strict", true, []kmsg.DescribeClientQuotasRequestComponent{quotaComponent(client, kmsg.QuotasMatchTypeDefault, "")}, nil},
		{"any user, strict", true, []kmsg.DescribeClientQuotasRequestComponent{quotaComponent(user, kmsg.QuotasMatchTypeAny, "")}, []string{"user=<default>"}},
		{"any user", false, []kmsg.DescribeClientQuotasRequestComponent{quotaComponent(user, kmsg.QuotasMatchTypeAny, "")}, []string{"user=<default>", "user=alice,client-id=<default>"}},
		{"no components, strict", true, nil, nil},
	} {
		got, code := describeQuotas(t, ctx, cl, tc.strict, tc.comps...)
		ok := code == 0 && len(got) == len(tc.want)
		for _, w := range tc.want {
			_, found := got[w]
			ok = ok && found
		}
		if !ok {
			t.Errorf("describe %s: code %d, %v; want %v", tc.name, code, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name  string
		comps []kmsg.DescribeClientQuotasRequestComponent
		code  int16
	}{
		{"bad entity type", []kmsg.DescribeClientQuotasRequestComponent{quotaComponent("group", kmsg.QuotasMatchTypeAny, "")}, kerr.UnsupportedVersion.Code},
		{"type twice", []kmsg.DescribeClientQuotasRequestComponent{quotaComponent(user, kmsg.QuotasMatchTypeAny, ""), quotaComponent(user, kmsg.QuotasMatchTypeDefault, "")}, invalid},
		{"empty type", []kmsg.DescribeClientQuotasRequestComponent{quotaComponent("", kmsg.QuotasMatchTypeAny, "")}, invalid},
	} {
		if got, code := describeQuotas(t, ctx, cl, false, tc.comps...); code != tc.code || len(got) != 0 {
			t.Errorf("describe %s: code %d, %v; want code %d", tc.name, code, got, tc.code)
		}
	}

	// Removing every key of an entity drops it from Describe.
	if got := alterQuotas(t, ctx, cl, false, quotaEntry(quotaEntity(user, ""), quotaOp(quota.ControllerMutationRate, 0, true))); len(got) != 1 || got[0] != 0 {
		t.Fatalf("remove: codes %v", got)
	}
	delete(want, "user=<default>")
	check("after removing user=<default>'s quota")
}

// TestRequestPercentageQuota: a client over request_percentage gets
// throttle_time_ms in its responses (Metadata v3+ here), counted under
// its entity, and its next request waits the throttle out (the muted
// connection), while another client's responses carry none.
func TestRequestPercentageQuota(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := testenv.Context(t, 2*time.Minute)
	admin := newClient(t, b.ListenerAddr("PLAINTEXT"))
	if got := alterQuotas(t, ctx, admin, false,
		quotaEntry(quotaEntity(quotaEntityClient, "busy"), quotaOp(quota.RequestPercentage, 0.0001, false))); len(got) != 1 || got[0] != 0 {
		t.Fatalf("alter: %v", got)
	}
	if err := b.ClientQuotas().Await(ctx, func(c map[quota.Entity]quota.Values) bool { return len(c) == 1 }); err != nil {
		t.Fatal(err)
	}
	// Raw connections, so that every request goes over the one connection
	// (franz-go spreads requests over several).
	metadata := func(c *rawConn, client string) (int32, time.Duration) {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 7
		c.corr++
		start := time.Now()
		c.writeRaw(kmsg.NewRequestFormatter(kmsg.FormatterClientID(client)).AppendRequest(nil, req, c.corr))
		body, err := c.readFrame(30 * time.Second)
		if err != nil {
			t.Fatalf("metadata as %s: %v", client, err)
		}
		return decodeResponse(t, req, c.corr, body).(*kmsg.MetadataResponse).ThrottleMillis, time.Since(start)
	}
	busy, other := dialRaw(t, b.ListenerAddr("PLAINTEXT")), dialRaw(t, b.ListenerAddr("PLAINTEXT"))
	var throttle int32
	for i := 0; throttle == 0; i++ {
		if i == 100 {
			t.Fatal("100 requests over a 0.0001% request quota, none throttled")
		}
		throttle, _ = metadata(busy, "busy")
	}
	_, waited := metadata(busy, "busy")
	t.Logf("throttled %d ms; the next request waited %v", throttle, waited)
	if waited < time.Duration(throttle)*time.Millisecond*8/10 {
		t.Errorf("the request after a %d ms throttle was answered after %v", throttle, waited)
	}
	if th, _ := metadata(other, "other"); th != 0 {
		t.Errorf("another client's response carried a %d ms throttle", th)
	}
	if n := counterValue(t, b.reg, "tributary_broker_quota_throttled_responses_total", map[string]string{"quota": "request", "client_id": "busy"}); n == 0 {
		t.Error("no throttled request counted for busy")
	}
}

// TestControllerMutationRateQuota: a client id's controller_mutation_rate
// quota replaces the broker-wide controller.mutation.rate (unlimited
// here) for that client: once its bucket is in debt, CreateTopics v6+
// answers THROTTLING_QUOTA_EXCEEDED with the time to wait; another client
// id creates freely.
func TestControllerMutationRateQuota(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := testenv.Context(t, 2*time.Minute)
	admin := newClient(t, b.ListenerAddr("PLAINTEXT"))
	if got := alterQuotas(t, ctx, admin, false,
		quotaEntry(quotaEntity(quotaEntityClient, "creator"), quotaOp(quota.ControllerMutationRate, 1, false))); len(got) != 1 || got[0] != 0 {
		t.Fatalf("alter: %v", got)
	}
	if err := b.ClientQuotas().Await(ctx, func(c map[quota.Entity]quota.Values) bool { return len(c) == 1 }); err != nil {
		t.Fatal(err)
	}
	create := func(cl *kgo.Client, topic string, partitions int32) (int16, int32) {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 6, 30000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].ErrorCode, resp.ThrottleMillis
	}
	creator := newClient(t, b.ListenerAddr("PLAINTEXT"), kgo.ClientID("creator"))
	// The burst is 1/s x 11 windows; a bucket not in debt grants a whole
	// request, so 12 partitions go through and leave it in debt.
	if code, _ := create(creator, "mut-a", 12); code != 0 {
		t.Fatalf("first creation: %v", kerr.ErrorForCode(code))
	}
	if code, throttle := create(creator, "mut-b", 1); code != kerr.ThrottlingQuotaExceeded.Code || throttle <= 0 {
		t.Fatalf("creation in debt: %v, throttle %d ms; want THROTTLING_QUOTA_EXCEEDED with a wait", kerr.ErrorForCode(code), throttle)
	}
	if code, _ := create(admin, "mut-c", 12); code != 0 {
		t.Errorf("another client id's creation: %v", kerr.ErrorForCode(code))
	}
	if code, _ := create(admin, "mut-d", 12); code != 0 {
		t.Errorf("another client id's second creation: %v", kerr.ErrorForCode(code))
	}
}
