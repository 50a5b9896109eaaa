package config

import (
	"errors"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ThrottledReplicas is a parsed *.replication.throttled.replicas value.
// It is comparable (Topic is); the zero value throttles no replica.
type ThrottledReplicas struct {
	raw string
	all bool
	// list is ",p:b,p:b," normalized, searched for ",p:b,".
	list string
}

// parseThrottledReplicas parses "", "*" or "p:b,p:b".
func parseThrottledReplicas(v string) (ThrottledReplicas, error) {
	raw := v
	v = strings.TrimSpace(v)
	switch v {
	case "":
		return ThrottledReplicas{raw: raw}, nil
	case "*":
		return ThrottledReplicas{raw: raw, all: true}, nil
	}
	t := ThrottledReplicas{raw: raw, list: ","}
	for _, item := range strings.Split(v, ",") {
		ps, bs, ok := strings.Cut(strings.TrimSpace(item), ":")
		p, perr := strconv.ParseInt(ps, 10, 32)
		b, berr := strconv.ParseInt(bs, 10, 32)
		if !ok || perr != nil || berr != nil || p < 0 || b < 0 {
			return ThrottledReplicas{}, errThrottledReplicas
		}
		t.list += strconv.FormatInt(p, 10) + ":" + strconv.FormatInt(b, 10) + ","
	}
	return t, nil
}

// Includes reports whether broker's replica of partition is throttled.
func (t ThrottledReplicas) Includes(partition, broker int32) bool {
	if t.all || t.list == "" {
		return t.all
	}
	return strings.Contains(t.list, ","+strconv.Itoa(int(partition))+":"+strconv.Itoa(int(broker))+",")
}

// errThrottledReplicas is Kafka's complaint about a malformed list.
var errThrottledReplicas = errors.New("must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")

// throttleTopicKeys are the topic configs naming throttled replicas; they
// have no broker default.
var throttleTopicKeys = []TopicKey{
	throttledReplicasKey("leader.replication.throttled.replicas",
		"Replicas (partition:broker, or *) whose leaders send at most leader.replication.throttled.rate to out-of-sync followers.",
		func(tc *Topic) *ThrottledReplicas { return &tc.LeaderThrottled }),
	throttledReplicasKey("follower.replication.throttled.replicas",
		"Replicas (partition:broker, or *) that copy at most follower.replication.throttled.rate while out of sync.",
		func(tc *Topic) *ThrottledReplicas { return &tc.FollowerThrottled }),
}

func throttledReplicasKey(name, doc string, field func(tc *Topic) *ThrottledReplicas) TopicKey {
	return TopicKey{
		Name: name, Type: kmsg.ConfigTypeList, Doc: doc,
		Apply: func(tc *Topic, v string) error {
			t, err := parseThrottledReplicas(v)
			*field(tc) = t
			return err
		},
		Value:        func(tc Topic) string { return field(&tc).raw },
		KafkaDefault: "",
	}
}
