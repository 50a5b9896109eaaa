package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/config"
)

// configEntry is one config as DescribeConfigs reports it.
type configEntry struct {
	name     string
	value    string
	source   kmsg.ConfigSource
	typ      kmsg.ConfigType
	doc      string
	readOnly bool
	// synonyms are the places the value may come from, most specific
	// first, as Kafka lists them.
	synonyms []configSynonym
}

type configSynonym struct {
	name   string
	value  string
	source kmsg.ConfigSource
}

// handleDescribeConfigs describes topics (their effective configs: an
// override is DYNAMIC_TOPIC_CONFIG, the rest comes from the broker, whose
// dynamic configs are synonyms) and this broker (its effective settings:
// the dynamic keys with DYNAMIC_BROKER_CONFIG or
// DYNAMIC_DEFAULT_BROKER_CONFIG sources, the rest read-only). Another
// broker's id is INVALID_REQUEST, as in Kafka, where clients send that
// request to the broker itself; an empty broker name lists the
// cluster-wide dynamic defaults that are set.
func (b *Broker) handleDescribeConfigs(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	resp.SetVersion(req.Version)
	snap := b.metadata()
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		fail := func(e *kerr.Error, msg string) {
			sr.ErrorCode, sr.ErrorMessage = e.Code, kmsg.StringPtr(msg)
		}
		var entries []configEntry
		if e := b.configAuthError(r, acl.OpDescribeConfigs, rr.ResourceType, rr.ResourceName); e != nil {
			fail(e, e.Message)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t, ok := snap.Topics[rr.ResourceName]
			if !ok {
				fail(kerr.UnknownTopicOrPartition, "topic "+rr.ResourceName+" does not exist")
				break
			}
			entries = b.topicConfigEntries(t.Configs)
		case kmsg.ConfigResourceTypeBroker:
			switch rr.ResourceName {
			case "":
				entries = b.defaultEntries()
			case strconv.Itoa(int(b.cfg.BrokerID)):
				entries = b.brokerConfigEntries()
			default:
				fail(kerr.InvalidRequest, fmt.Sprintf("unexpected broker id, expected %d or empty string, but received %s",
					b.cfg.BrokerID, rr.ResourceName))
			}
		default:
			fail(kerr.InvalidRequest, fmt.Sprintf("unsupported resource type %s", rr.ResourceType))
		}
		for _, e := range entries {
			if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, e.name) {
				continue
			}
			sr.Configs = append(sr.Configs, e.kmsg(req.IncludeSynonyms, req.IncludeDocumentation))
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return kmsgReply{resp}, nil
}

func (e configEntry) kmsg(synonyms, doc bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.Value, c.ReadOnly = e.name, kmsg.StringPtr(e.value), e.readOnly
	c.Source, c.ConfigType = e.source, e.typ
	// v0 has only IsDefault; Kafka sets it for values no one configured.
	c.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig
	if synonyms {
		for _, s := range e.synonyms {
			cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			cs.Name, cs.Value, cs.Source = s.name, kmsg.StringPtr(s.value), s.source
			c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
		}
	}
	if doc && e.doc != "" {
		c.Documentation = kmsg.StringPtr(e.doc)
	}
	return c
}

// topicConfigEntries lists every topic-level key with its effective value
// for a topic with these overrides. Invalid overrides fall back to the
// broker's values, as the broker applies them.
func (b *Broker) topicConfigEntries(overrides map[string]string) []configEntry {
	dyn := b.dynamic()
	defaults := dyn.settings.topic
	if _, err := config.ResolveTopic(defaults, overrides); err != nil {
		overrides = nil
	}
	out := make([]configEntry, 0, len(config.TopicKeys()))
	for _, k := range config.TopicKeys() {
		var brokerSyn []configSynonym
		if dk, ok := findDynamicKey(k.BrokerKey); ok {
			brokerSyn = dyn.synonyms(dk)
		} else if k.BrokerKey != "" {
			v, src := k.Value(defaults), kmsg.ConfigSourceStaticBrokerConfig
			if v == k.KafkaDefault {
				src = kmsg.ConfigSourceDefaultConfig
			}
			brokerSyn = []configSynonym{{k.BrokerKey, v, src}}
		}
		e := configEntry{name: k.Name, value: k.Value(defaults), source: kmsg.ConfigSourceDefaultConfig, typ: k.Type, doc: k.Doc}
		if len(brokerSyn) > 0 {
			e.source = brokerSyn[0].source
		}
		if v, ok := overrides[k.Name]; ok {
			e.value, e.source = v, kmsg.ConfigSourceDynamicTopicConfig
			e.synonyms = append(e.synonyms, configSynonym{k.Name, v, kmsg.ConfigSourceDynamicTopicConfig})
		}
		e.synonyms = append(e.synonyms, brokerSyn...)
		out = append(out, e)
	}
	return out
}

// brokerConfigEntries lists the broker's effective settings under their
// server.properties names: the dynamic keys first, then the read-only ones.
func (b *Broker) brokerConfigEntries() []configEntry {
	c := b.cfg
	tc := c.TopicDefaults()
	var out []configEntry
	add := func(name, value, kafkaDefault string, typ kmsg.ConfigType) {
		src := kmsg.ConfigSourceStaticBrokerConfig
		if value == kafkaDefault {
			src = kmsg.ConfigSourceDefaultConfig
		}
		out = append(out, configEntry{name: name, value: value, source: src, typ: typ, readOnly: true,
			synonyms: []configSynonym{{name, value, src}}})
	}
	dyn := b.dynamic()
	for _, k := range dynamicKeys() {
		out = append(out, dyn.entry(k))
	}
	out = append(out, dyn.listenerTLSEntries()...)
	for _, k := range config.TopicKeys() {
		if k.BrokerKey != "" && !isDynamicKey(k.BrokerKey) {
			add(k.BrokerKey, k.Value(tc), k.KafkaDefault, k.Type)
		}
	}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	add("broker.id", itoa(int64(c.BrokerID)), "-1", kmsg.ConfigTypeInt)
	add("listeners", c.Listeners, config.DefaultListeners, kmsg.ConfigTypeString)
	add("advertised.listeners", c.AdvertisedListeners, "", kmsg.ConfigTypeString)
	add("log.dirs", strings.Join(c.LogDirs, ","), "", kmsg.ConfigTypeString)
	add("num.partitions", itoa(int64(c.NumPartitions)), itoa(config.DefaultNumPartitions), kmsg.ConfigTypeInt)
	add("auto.create.topics.enable", strconv.FormatBool(!c.DisableAutoCreateTopics), "true", kmsg.ConfigTypeBoolean)
	add("default.replication.factor", itoa(int64(c.DefaultReplicationFactor)), itoa(config.DefaultReplicationFactor), kmsg.ConfigTypeInt)
	add("log.retention.check.interval.ms", itoa(c.RetentionCheckInterval.Milliseconds()),
		itoa(config.DefaultRetentionCheckInterval.Milliseconds()), kmsg.ConfigTypeLong)
	add("socket.request.max.bytes", itoa(int64(c.SocketRequestMaxBytes)), itoa(config.DefaultSocketRequestMaxBytes), kmsg.ConfigTypeInt)
	add("zookeeper.connect", c.ZooKeeperConnect, "", kmsg.ConfigTypeString)
	add("zookeeper.session.timeout.ms", itoa(c.ZooKeeperSessionTimeout.Milliseconds()),
		itoa(config.DefaultZooKeeperSession.Milliseconds()), kmsg.ConfigTypeInt)
	return out
}
