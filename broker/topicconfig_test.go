package broker

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

func strp(s string) *string { return &s }

// configValues maps a described resource's configs to value and source.
func configValues(t *testing.T, rcs kadm.ResourceConfigs, name string) map[string]kadm.Config {
	t.Helper()
	rc, err := rcs.On(name, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v / %v (%s)", name, err, rc.Err, rc.ErrMessage)
	}
	out := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		out[c.Key] = c
	}
	return out
}

// TestTopicConfigsCreateDescribeProduce: overrides given to CreateTopics
// come back in its response and from DescribeConfigs, are applied by the
// partition (max.message.bytes), survive a restart of a standalone broker,
// and bad ones are rejected with INVALID_CONFIG naming the key.
func TestTopicConfigsCreateDescribeProduce(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) { c.RetentionBytes = 1 << 30 })
	ctx := testenv.Context(t, time.Minute)
	cl := newClient(t, b.Addr(), kgo.RecordRetries(2), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)

	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"max.message.bytes": strp("2000"), "retention.ms": strp("3600000"), "cleanup.policy": strp("delete"),
	}, "limited")
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v / %v (%s)", err, resp.Err, resp.ErrMessage)
	}
	if c := resp.Configs["max.message.bytes"]; c.MaybeValue() != "2000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("create response max.message.bytes = %q source %v", c.MaybeValue(), c.Source)
	}
	if _, leaked := resp.Configs[cluster.LegacyTopicIDConfig]; leaked {
		t.Error("create response shows the reserved topic id key")
	}

	check := func(what string) {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(ctx, "limited")
		if err != nil {
			t.Fatalf("%s: describe: %v", what, err)
		}
		got := configValues(t, rcs, "limited")
		for _, w := range []struct {
			key, value string
			source     kmsg.ConfigSource
		}{
			{"max.message.bytes", "2000", kmsg.ConfigSourceDynamicTopicConfig},
			{"retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig},
			{"cleanup.policy", "delete", kmsg.ConfigSourceDynamicTopicConfig},
			{"segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig},
			{"retention.bytes", "1073741824", kmsg.ConfigSourceStaticBrokerConfig},
			{"message.timestamp.type", "CreateTime", kmsg.ConfigSourceDefaultConfig},
		} {
			c, ok := got[w.key]
			if !ok || c.MaybeValue() != w.value || c.Source != w.source {
				t.Errorf("%s: %s = %q (source %v), want %q (%v)", what, w.key, c.MaybeValue(), c.Source, w.value, w.source)
			}
		}
		if len(got) != len(config.TopicKeys()) {
			t.Errorf("%s: %d configs described, want %d", what, len(got), len(config.TopicKeys()))
		}
		// The override's synonyms name the broker property it overrides.
		if syn := got["retention.ms"].Synonyms; len(syn) != 2 || syn[1].Key != "log.retention.ms" || syn[1].Value == nil || *syn[1].Value != "604800000" {
			t.Errorf("%s: retention.ms synonyms %+v", what, syn)
		}
	}
	check("after create")

	small := &kgo.Record{Topic: "limited", Value: bytes.Repeat([]byte("s"), 100)}
	if err := cl.ProduceSync(ctx, small).FirstErr(); err != nil {
		t.Fatalf("small record: %v", err)
	}
	big := &kgo.Record{Topic: "limited", Value: bytes.Repeat([]byte("b"), 3000)}
	if err := cl.ProduceSync(ctx, big).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("record over max.message.bytes: %v, want MESSAGE_TOO_LARGE", err)
	}
	// The broker default still applies to other topics.
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, "other"); err != nil || resp.Err != nil {
		t.Fatalf("create other: %v / %v", err, resp.Err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: big.Value}).FirstErr(); err != nil {
		t.Fatalf("big record to a topic without override: %v", err)
	}

	for _, tt := range []struct {
		configs map[string]*string
		code    *kerr.Error
		msg     string
	}{
		{map[string]*string{"retention.msec": strp("1")}, kerr.InvalidConfig, "retention.msec"},
		{map[string]*string{"segment.bytes": strp("big")}, kerr.InvalidConfig, "segment.bytes"},
		{map[string]*string{"cleanup.policy": strp("shred")}, kerr.InvalidConfig, "cleanup.policy"},
		{map[string]*string{"retention.ms": nil}, kerr.InvalidConfig, "retention.ms"},
		{map[string]*string{cluster.LegacyTopicIDConfig: strp("x")}, kerr.InvalidConfig, cluster.LegacyTopicIDConfig},
	} {
		// kadm returns the topic's error both ways.
		resp, err := adm.CreateTopic(ctx, 1, 1, tt.configs, "rejected")
		if err != nil && !errors.Is(err, resp.Err) {
			t.Fatal(err)
		}
		if !errors.Is(resp.Err, tt.code) || !strings.Contains(resp.ErrMessage, tt.msg) {
			t.Errorf("configs %v: %v %q, want %v naming %q", tt.configs, resp.Err, resp.ErrMessage, tt.code, tt.msg)
		}
	}
	if _, ok := b.metadata().Topics["rejected"]; ok {
		t.Error("a topic with invalid configs was created")
	}

	// A standalone broker's coordinator starts empty: the overrides come
	// back from the partition directories.
	cfg := b.cfg
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startTestBroker(t, cfg)
	cl = newClient(t, b.Addr(), kgo.RecordRetries(2), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm = kadm.NewClient(cl)
	check("after restart")
	if err := cl.ProduceSync(ctx, big).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("after restart, record over max.message.bytes: %v", err)
	}
}

// TestDescribeBrokerConfigs: the broker resource shows the effective
// settings of the broker asked, read-only; another broker's id is refused.
func TestDescribeBrokerConfigs(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) { c.BrokerID = 7; c.SegmentBytes = 1 << 20 })
	ctx := testenv.Context(t, time.Minute)
	adm := kadm.NewClient(newClient(t, b.Addr()))
	rcs, err := adm.DescribeBrokerConfigs(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	got := configValues(t, rcs, "7")
	for key, want := range map[string]string{
		"broker.id": "7", "log.segment.bytes": "1048576", "message.max.bytes": "1048588",
		"log.retention.ms": "604800000", "log.cleanup.policy": "delete", "log.dirs": b.cfg.LogDirs[0],
	} {
		if c := got[key]; c.MaybeValue() != want {
			t.Errorf("%s = %q, want %q", key, c.MaybeValue(), want)
		}
	}
	if s := got["log.segment.bytes"].Source; s != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("log.segment.bytes source %v, want STATIC_BROKER_CONFIG", s)
	}
	if s := got["message.max.bytes"].Source; s != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("message.max.bytes source %v, want DEFAULT_CONFIG", s)
	}

	c := dialRaw(t, b.Addr())
	describe := apiTable[int16(kmsg.DescribeConfigs)]
	for v := describe.min; v <= describe.max; v++ {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.SetVersion(v)
		req.IncludeDocumentation = true
		for _, r := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{{kmsg.ConfigResourceTypeBroker, "8"}, {kmsg.ConfigResourceTypeTopic, "nope"}, {kmsg.ConfigResourceTypeBroker, "7"}} {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			if r.name == "7" {
				rr.ConfigNames = []string{"log.segment.bytes"}
			}
			req.Resources = append(req.Resources, rr)
		}
		resp := c.roundTrip(req).(*kmsg.DescribeConfigsResponse)
		if len(resp.Resources) != 3 {
			t.Fatalf("v%d: %d resources", v, len(resp.Resources))
		}
		if code := resp.Resources[0].ErrorCode; code != kerr.InvalidRequest.Code {
			t.Errorf("v%d: another broker's id: error %d", v, code)
		}
		if code := resp.Resources[1].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("v%d: unknown topic: error %d", v, code)
		}
		cs := resp.Resources[2].Configs
		// log.segment.bytes is a dynamic broker config: not read-only.
		if len(cs) != 1 || cs[0].Name != "log.segment.bytes" || *cs[0].Value != "1048576" || cs[0].ReadOnly || cs[0].IsDefault {
			t.Errorf("v%d: filtered broker configs %+v", v, cs)
		}
		if v >= 3 && (len(cs) != 1 || cs[0].ConfigType != kmsg.ConfigTypeInt) {
			t.Errorf("v%d: config type missing: %+v", v, cs)
		}
	}
}

// TestTopicRetentionOverride: a topic with small segment.bytes and
// retention.ms loses its old segments while a topic on broker defaults
// keeps everything.
func TestTopicRetentionOverride(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) { c.RetentionCheckInterval = 50 * time.Millisecond })
	ctx := testenv.Context(t, time.Minute)
	cl := newClient(t, b.Addr(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	for topic, configs := range map[string]map[string]*string{
		"short": {"retention.ms": strp("1000"), "segment.bytes": strp("200")},
		"long":  {"segment.bytes": strp("200")},
	} {
		if resp, err := adm.CreateTopic(ctx, 1, 1, configs, topic); err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v / %v", topic, err, resp.Err)
		}
	}
	old := time.Now().Add(-time.Hour)
	for i := range 5 {
		for _, topic := range []string{"short", "long"} {
			r := &kgo.Record{Topic: topic, Value: bytes.Repeat([]byte{byte('0' + i)}, 150), Timestamp: old}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	short, long := b.partitions.Leader("short", 0), b.partitions.Leader("long", 0)
	for short.Log().StartOffset() < 4 {
		select {
		case <-ctx.Done():
			t.Fatalf("retention.ms did not delete old segments: start offset %d", short.Log().StartOffset())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if got := long.Log().StartOffset(); got != 0 {
		t.Errorf("topic on default retention lost data: start offset %d", got)
	}
	// What is left is the newest record, intact.
	v, err := short.Log().Read(4, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	data, _ := v.Bytes()
	if !bytes.Contains(data, bytes.Repeat([]byte("4"), 150)) {
		t.Errorf("remaining batch does not hold the last record")
	}
}

// TestLogAppendTime: a LogAppendTime topic stamps batches with the
// broker's clock, whatever the producer said.
func TestLogAppendTime(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := testenv.Context(t, time.Minute)
	cl := newClient(t, b.Addr(), kgo.ConsumeTopics("lat"))
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": strp("LogAppendTime")}, "lat"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v / %v", err, resp.Err)
	}
	before := time.Now().Truncate(time.Millisecond)
	res := cl.ProduceSync(ctx, &kgo.Record{Topic: "lat", Value: []byte("v"), Timestamp: time.UnixMilli(1000)})
	after := time.Now()
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := cl.PollFetches(ctx)
	if errs := fs.Errors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	recs := fs.Records()
	if len(recs) != 1 || string(recs[0].Value) != "v" {
		t.Fatalf("consumed %v", recs)
	}
	r := recs[0]
	if r.Attrs.TimestampType() != 1 || r.Timestamp.Before(before) || r.Timestamp.After(after) {
		t.Errorf("timestamp %v (type %d), want the append time in [%v, %v]", r.Timestamp, r.Attrs.TimestampType(), before, after)
	}
}

// TestTopicConfigChangeApplied: overrides changed in the coordinator (as an
// operator's tool would write /config/topics/<topic>) apply to the served
// partitions: storage settings by reopening the log, data kept.
func TestTopicConfigChangeApplied(t *testing.T) {
	srv := memcoord.NewServer()
	connect := WithCoordinator(func(context.Context) (coord.Session, error) { return srv.Connect(memcoord.Config{}), nil })
	b := newTestBroker(t, nil, connect)
	ctx := testenv.Context(t, time.Minute)
	if err := b.CreateTopicWithConfigs(ctx, "live", 1, map[string]string{"segment.bytes": "100000"}); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b.Addr(), kgo.RecordRetries(5), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "live", Value: bytes.Repeat([]byte("x"), 3000)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s := srv.Connect(memcoord.Config{})
	t.Cleanup(func() { s.Close() })
	data, _, err := s.Get(ctx, "/config/topics/live")
	if err != nil {
		t.Fatal(err)
	}
	id := b.metadata().Topics["live"].ID
	if id == "" || bytes.Contains(data, []byte(id)) {
		t.Fatalf("config node %s holds the topic id %q, or there is none", data, id)
	}
	updated := `{"version":1,"config":{"segment.bytes":"2000","max.message.bytes":"1000"}}`
	if _, err := s.Set(ctx, "/config/topics/live", []byte(updated), coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	for {
		p := b.partitions.Leader("live", 0)
		if p != nil && p.Settings().SegmentBytes == 2000 && p.Config().MaxMessageBytes == 1000 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("changed overrides were not applied")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "live", Value: bytes.Repeat([]byte("y"), 1500)}).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("record over the new max.message.bytes: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "live", Value: []byte("small")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for off, want := range [][]byte{bytes.Repeat([]byte("x"), 3000), []byte("small")} {
		v, err := b.partitions.Leader("live", 0).Log().Read(int64(off), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := v.Bytes()
		v.Release()
		if !bytes.Contains(got, want) {
			t.Errorf("the reopened log lost record %d", off)
		}
	}
}

// TestIncrementalAlterTopicConfigs: kadm alterations are validated, stored
// next to the topic id and applied to the served partition; deleting an
// override brings the broker default back; broker configs are static.
func TestIncrementalAlterTopicConfigs(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := testenv.Context(t, time.Minute)
	cl := newClient(t, b.Addr(), kgo.RecordRetries(5), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": strp("86400000")}, "alt"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v / %v", err, resp.Err)
	}
	id := b.metadata().Topics["alt"].ID
	awaitConf := func(what string, cond func(p *partition.Replica) bool) {
		t.Helper()
		for {
			if p := b.partitions.Leader("alt", 0); p != nil && cond(p) {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: not applied", what)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	alter := func(validate bool, ops ...kadm.AlterConfig) kadm.AlterConfigsResponse {
		t.Helper()
		f := adm.AlterTopicConfigs
		if validate {
			f = adm.ValidateAlterTopicConfigs
		}
		rs, err := f(ctx, ops, "alt")
		if err != nil || len(rs) != 1 {
			t.Fatalf("alter %v: %v (%d responses)", ops, err, len(rs))
		}
		return rs[0]
	}

	if r := alter(false,
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "max.message.bytes", Value: strp("1000")},
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "segment.bytes", Value: strp("5000")},
		kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "retention.ms"},
	); r.Err != nil {
		t.Fatalf("alter: %v %s", r.Err, r.ErrMessage)
	}
	awaitConf("set", func(p *partition.Replica) bool {
		return p.Settings().SegmentBytes == 5000 && p.Config().MaxMessageBytes == 1000 && p.Settings().Retention == config.DefaultRetention
	})
	if got := b.metadata().Topics["alt"].ID; got != id || id == "" {
		t.Fatalf("topic id after alter %q, want %q", got, id)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "alt", Value: bytes.Repeat([]byte("z"), 1500)}).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("record over the altered max.message.bytes: %v", err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "alt")
	if err != nil {
		t.Fatal(err)
	}
	got := configValues(t, rcs, "alt")
	if c := got["retention.ms"]; c.MaybeValue() != "604800000" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("deleted override: retention.ms = %q (%v)", c.MaybeValue(), c.Source)
	}
	if c := got["segment.bytes"]; c.MaybeValue() != "5000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("segment.bytes = %q (%v)", c.MaybeValue(), c.Source)
	}

	for _, tt := range []struct {
		op   kadm.AlterConfig
		code *kerr.Error
		msg  string
	}{
		{kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: strp("x")}, kerr.InvalidConfig, "retention.ms"},
		{kadm.AlterConfig{Op: kadm.SetConfig, Name: "nope", Value: strp("1")}, kerr.InvalidConfig, "nope"},
		{kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: strp("shred")}, kerr.InvalidConfig, "cleanup.policy"},
		{kadm.AlterConfig{Op: kadm.AppendConfig, Name: "retention.ms", Value: strp("1")}, kerr.InvalidConfig, "retention.ms"},
		{kadm.AlterConfig{Op: kadm.DeleteConfig, Name: cluster.LegacyTopicIDConfig}, kerr.InvalidConfig, cluster.LegacyTopicIDConfig},
	} {
		if r := alter(false, tt.op); !errors.Is(r.Err, tt.code) || !strings.Contains(r.ErrMessage, tt.msg) {
			t.Errorf("%+v: %v %q, want %v naming %q", tt.op, r.Err, r.ErrMessage, tt.code, tt.msg)
		}
	}
	// Validation alone changes nothing.
	if r := alter(true, kadm.AlterConfig{Op: kadm.SetConfig, Name: "max.message.bytes", Value: strp("9")}); r.Err != nil {
		t.Fatalf("validate only: %v", r.Err)
	}
	if v := b.metadata().Topics["alt"].Configs["max.message.bytes"]; v != "1000" {
		t.Errorf("validate-only alteration was applied: max.message.bytes = %q", v)
	}
	// A read-only broker config cannot be altered (dynamic ones can:
	// dynconfig.go, TestDynamicBrokerConfigs).
	rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "broker.id", Value: strp("1")}}, 0)
	if err != nil || len(rs) != 1 || !errors.Is(rs[0].Err, kerr.InvalidConfig) {
		t.Errorf("altering broker.id: %v %+v, want INVALID_CONFIG", err, rs)
	}
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: strp("1")}}, "missing")
	if err != nil || len(rs) != 1 || !errors.Is(rs[0].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("altering a missing topic: %v %+v", err, rs)
	}
}
