package properties_test

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/loader"
	"github.com/tributary/tributary/mirror"
)

// view is what the conformance suite reads back from a configuration: one
// key of each kind.
type view struct {
	Bool bool
	Int  int64
	Dur  time.Duration
	List []string
	Str  string
	// Free is a key taking any string, for the escaping round trips.
	Free string
}

// target is one configuration the suite runs against.
type target struct {
	name string
	// base is a valid configuration, to which each case adds its key.
	base map[string]string
	// The key of each kind of value.
	boolKey, intKey, durKey, listKey, strKey, freeKey string
	// parse builds and validates the configuration.
	parse func(props map[string]string) (view, []string, error)
}

var targets = []target{
	{
		name:    "broker",
		base:    map[string]string{"log.dirs": "/data"},
		boolKey: "auto.create.topics.enable", intKey: "num.partitions", durKey: "log.retention.check.interval.ms",
		listKey: "log.dirs", strKey: "broker.rack", freeKey: "broker.rack",
		parse: func(props map[string]string) (view, []string, error) {
			c, warnings, err := config.FromProperties(props)
			return view{
				Bool: !c.DisableAutoCreateTopics, Int: int64(c.NumPartitions), Dur: c.RetentionCheckInterval,
				List: c.LogDirs, Str: c.BrokerRack, Free: c.BrokerRack,
			}, warnings, err
		},
	},
	{
		name: "mirror",
		base: map[string]string{
			"source.dc1.bootstrap.servers": "127.0.0.1:1", "target.bootstrap.servers": "127.0.0.1:2",
			"topics": "t", "group.id": "g",
		},
		boolKey: "audit.enable", intKey: "buffer.max.records", durKey: "offset.commit.interval.ms",
		listKey: "target.bootstrap.servers", strKey: "producer.compression.type", freeKey: "topics",
		parse: func(props map[string]string) (view, []string, error) {
			c, unknown, err := mirror.ConfigFromProperties(props)
			if err == nil {
				err = c.Validate()
			}
			return view{
				Bool: !c.AuditDisable, Int: int64(c.BufferRecords), Dur: c.CommitInterval,
				List: c.TargetBrokers, Str: c.Compression, Free: c.Topics,
			}, unknown, err
		},
	},
	{
		name: "loader",
		base: map[string]string{
			"name": "job", "bootstrap.servers": "127.0.0.1:1", "schema.registry.url": "http://127.0.0.1:2",
			"topics": "t", "output.uri": "file:///out",
		},
		boolKey: "audit.enable", intKey: "commit.records", durKey: "commit.interval.ms",
		listKey: "bootstrap.servers", strKey: "codec", freeKey: "topics",
		parse: func(props map[string]string) (view, []string, error) {
			c, unknown, err := loader.ConfigFromProperties(props)
			return view{
				Bool: !c.AuditDisable, Int: c.CommitRecords, Dur: c.CommitInterval,
				List: c.Brokers, Str: c.Codec, Free: c.Topics,
			}, unknown, err
		},
	},
}

func with(base map[string]string, kv ...string) map[string]string {
	m := maps.Clone(base)
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// refused checks that err refuses key, naming it, and, when the value was
// refused by its getter rather than by validation, naming the value too.
func refused(t *testing.T, tg target, key, value string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: %s=%q accepted, want refused", tg.name, key, value)
		return
	}
	if !strings.Contains(err.Error(), key) {
		t.Errorf("%s: %s=%q: error %q does not name the key", tg.name, key, value, err)
	}
	var e *properties.Error
	if errors.As(err, &e) && (e.Key != key || e.Value != strings.TrimSpace(value)) {
		t.Errorf("%s: %s=%q: error names %s=%q", tg.name, key, value, e.Key, e.Value)
	}
}

// TestSameSpellingsEverywhere feeds the same value spellings to a key of
// each kind of every configuration: they are accepted as the same value or
// refused, naming the key, by all of them.
func TestSameSpellingsEverywhere(t *testing.T) {
	type spelling struct {
		in   string
		ok   bool
		want any
	}
	kinds := []struct {
		kind  string
		key   func(target) string
		get   func(view) any
		cases []spelling
	}{
		{"bool", func(tg target) string { return tg.boolKey }, func(v view) any { return v.Bool }, []spelling{
			{"true", true, true}, {"TRUE", true, true}, {" true ", true, true}, {"False", true, false},
			{"false", true, false}, {"yes", false, nil}, {"1", false, nil}, {"t", false, nil}, {"", false, nil},
		}},
		{"int", func(tg target) string { return tg.intKey }, func(v view) any { return v.Int }, []spelling{
			{"100", true, int64(100)}, {" 100 ", true, int64(100)}, {"+7", true, int64(7)},
			{"-1", false, nil}, {"0", false, nil}, {"1e3", false, nil}, {"", false, nil}, {"100x", false, nil},
			{"1_000", false, nil}, {"99999999999999999999", false, nil},
		}},
		{"duration", func(tg target) string { return tg.durKey }, func(v view) any { return v.Dur }, []spelling{
			{"1500", true, 1500 * time.Millisecond}, {" 1500\t", true, 1500 * time.Millisecond},
			{"0", false, nil}, {"-1", false, nil}, {"1s", false, nil}, {"1.5", false, nil}, {"", false, nil},
		}},
		{"list", func(tg target) string { return tg.listKey }, func(v view) any { return strings.Join(v.List, "|") }, []spelling{
			{"h1:1", true, "h1:1"}, {" h1:1 , ,h2:2,, ", true, "h1:1|h2:2"}, {"h1:1,h2:2", true, "h1:1|h2:2"},
			{"", false, nil}, {" , ,", false, nil},
		}},
		{"string", func(tg target) string { return tg.strKey }, func(v view) any { return v.Str }, []spelling{
			{"snappy", true, "snappy"}, {"snappy ", true, "snappy"}, {"\tsnappy  ", true, "snappy"},
		}},
	}
	for _, k := range kinds {
		for _, tg := range targets {
			key := k.key(tg)
			for _, sp := range k.cases {
				got, _, err := tg.parse(with(tg.base, key, sp.in))
				if !sp.ok {
					refused(t, tg, key, sp.in, err)
					continue
				}
				if err != nil {
					t.Errorf("%s: %s=%q refused: %v", tg.name, key, sp.in, err)
				} else if g := k.get(got); g != sp.want {
					t.Errorf("%s: %s=%q read as %v, want %v", tg.name, key, sp.in, g, sp.want)
				}
			}
		}
	}
}

// TestEveryProblemAtOnce: three bad values, three keys named in one error.
func TestEveryProblemAtOnce(t *testing.T) {
	for _, tg := range targets {
		_, _, err := tg.parse(with(tg.base, tg.boolKey, "maybe", tg.intKey, "0", tg.durKey, "soon"))
		for _, key := range []string{tg.boolKey, tg.intKey, tg.durKey} {
			if err == nil || !strings.Contains(err.Error(), key) {
				t.Errorf("%s: error %v does not name %s", tg.name, err, key)
			}
		}
	}
}

// TestFilesThroughTheReader: escaped keys, unknown keys sorted, comments and
// continuations, read from a file's text by the one reader.
func TestFilesThroughTheReader(t *testing.T) {
	for _, tg := range targets {
		var b bytes.Buffer
		if err := properties.Write(&b, tg.base); err != nil {
			t.Fatal(err)
		}
		b.WriteString("# comment\n! comment\n")
		b.WriteString(strings.ReplaceAll(tg.intKey, ".", `\.`) + " = 4\\\n   2\n") // num\.partitions = 4\ 2 -> 42
		b.WriteString("zz.unknown=1\na\\=b=c\n  aa.unknown : 2\n")
		props, err := properties.Read(&b)
		if err != nil {
			t.Fatal(err)
		}
		got, unknown, err := tg.parse(props)
		if err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		if got.Int != 42 {
			t.Errorf("%s: escaped %s read as %d, want 42", tg.name, tg.intKey, got.Int)
		}
		want := []string{"a=b", "aa.unknown", "zz.unknown"}
		if len(unknown) != len(want) {
			t.Fatalf("%s: unknown %q, want %q", tg.name, unknown, want)
		}
		for i, w := range want {
			if !strings.Contains(unknown[i], w) {
				t.Errorf("%s: unknown[%d] = %q, want %q (sorted)", tg.name, i, unknown[i], w)
			}
		}
	}
}

// TestEscapingRoundTrips: what the writer writes, each reader reads back
// exactly (the scheduled loader's QuoteMeta'd topic, separators, unicode).
func TestEscapingRoundTrips(t *testing.T) {
	for _, tg := range targets {
		for _, v := range []string{`page\.views`, `x=y`, `a:b#c!d`, `ü😀`, `page\.views|x=y|ü😀`, `\\`} {
			var b bytes.Buffer
			if err := properties.Write(&b, with(tg.base, tg.freeKey, v)); err != nil {
				t.Fatal(err)
			}
			props, err := properties.Read(&b)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := tg.parse(props)
			if err != nil {
				t.Fatalf("%s: %s=%q: %v", tg.name, tg.freeKey, v, err)
			}
			if got.Free != v {
				t.Errorf("%s: %s=%q read back as %q", tg.name, tg.freeKey, v, got.Free)
			}
		}
	}
}

// TestNoWarningForKnownKeys: the keys a configuration lists as its own, and
// the broker's Kafka keys accepted on purpose, draw no unknown-key warning.
func TestNoWarningForKnownKeys(t *testing.T) {
	for _, c := range []struct {
		tg   target
		keys []string
	}{
		{targets[0], []string{"num.network.threads", "num.io.threads", "socket.send.buffer.bytes",
			"inter.broker.listener.name", "log.retention.hours", "log.roll.hours"}},
		{targets[1], mirror.Keys},
		{targets[2], loader.Keys},
	} {
		props := maps.Clone(c.tg.base)
		for _, k := range c.keys {
			if _, ok := props[k]; !ok {
				props[k] = "1"
			}
		}
		_, unknown, _ := c.tg.parse(props)
		if len(unknown) > 0 {
			t.Errorf("%s: known keys reported unknown: %q", c.tg.name, unknown)
		}
		if !slices.IsSorted(unknown) {
			t.Errorf("%s: unknown keys not sorted", c.tg.name)
		}
	}
}
