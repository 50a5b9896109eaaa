package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// Registry paths, Kafka 0.8's ZookeeperConsumerConnector layout; frozen.
func idsPath(group string) string { return coord.Join("/consumers", group, "ids") }
func idPath(group, id string) string {
	return coord.Join("/consumers", group, "ids", id)
}
func ownerPath(group, topic string, p int32) string {
	return coord.Join("/consumers", group, "owners", topic, strconv.Itoa(int(p)))
}
func offsetPath(group, topic string, p int32) string {
	return coord.Join("/consumers", group, "offsets", topic, strconv.Itoa(int(p)))
}

const (
	brokerIDsPath    = "/brokers/ids"
	brokerTopicsPath = "/brokers/topics"
)

// consumerRegistration is the data of /consumers/<group>/ids/<consumer>,
// byte-compatible with Kafka 0.8 (timestamp is a string of milliseconds).
type consumerRegistration struct {
	Version      int            `json:"version"`
	Subscription map[string]int `json:"subscription"`
	Pattern      string         `json:"pattern"`
	Timestamp    string         `json:"timestamp"`
}

func encodeRegistration(sub map[string]int, now time.Time) []byte {
	b, _ := json.Marshal(consumerRegistration{
		Version:      1,
		Subscription: sub,
		Pattern:      "static",
		Timestamp:    strconv.FormatInt(now.UnixMilli(), 10),
	})
	return b
}

// topicAssignment is the data of /brokers/topics/<topic>: partition ->
// replica broker ids.
type topicAssignment struct {
	Partitions map[string][]int32 `json:"partitions"`
}

// brokerRegistration is the part of /brokers/ids/<id> a consumer needs.
type brokerRegistration struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

// readTopicPartitions returns the partition ids in the topic's registry,
// sorted, and whether the registry exists.
func readTopicPartitions(ctx context.Context, s coord.Session, topic string) ([]int32, bool, error) {
	data, _, err := s.Get(ctx, coord.Join(brokerTopicsPath, topic))
	if errors.Is(err, coord.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var ta topicAssignment
	if err := json.Unmarshal(data, &ta); err != nil {
		return nil, true, fmt.Errorf("%w: %s: %v", ErrBadRegistry, coord.Join(brokerTopicsPath, topic), err)
	}
	parts := make([]int32, 0, len(ta.Partitions))
	for k := range ta.Partitions {
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil || p < 0 {
			return nil, true, fmt.Errorf("%w: %s: partition %q", ErrBadRegistry, coord.Join(brokerTopicsPath, topic), k)
		}
		parts = append(parts, int32(p))
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	return parts, true, nil
}

// readBrokerAddrs returns host:port of every registered broker.
func readBrokerAddrs(ctx context.Context, s coord.Session) ([]string, error) {
	ids, _, err := s.Children(ctx, brokerIDsPath)
	if err != nil && !errors.Is(err, coord.ErrNoNode) {
		return nil, err
	}
	var addrs []string
	for _, id := range ids {
		data, _, err := s.Get(ctx, coord.Join(brokerIDsPath, id))
		if errors.Is(err, coord.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var br brokerRegistration
		if err := json.Unmarshal(data, &br); err != nil || br.Host == "" || br.Port == 0 {
			return nil, fmt.Errorf("%w: %s: %s", ErrBadRegistry, coord.Join(brokerIDsPath, id), data)
		}
		addrs = append(addrs, net.JoinHostPort(br.Host, strconv.Itoa(br.Port)))
	}
	return addrs, nil
}

// readOffset returns the committed next offset, or -1 when none.
func readOffset(ctx context.Context, s coord.Session, group, topic string, p int32) (int64, error) {
	data, _, err := s.Get(ctx, offsetPath(group, topic, p))
	if errors.Is(err, coord.ErrNoNode) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	off, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil || off < 0 {
		return -1, fmt.Errorf("%w: %s: %q", ErrBadRegistry, offsetPath(group, topic, p), data)
	}
	return off, nil
}

// writeOffset stores a committed offset, creating the node when missing.
func writeOffset(ctx context.Context, s coord.Session, group, topic string, p int32, off int64) error {
	path := offsetPath(group, topic, p)
	data := []byte(strconv.FormatInt(off, 10))
	for {
		_, err := s.Set(ctx, path, data, coord.AnyVersion)
		if !errors.Is(err, coord.ErrNoNode) {
			return err
		}
		_, err = s.CreateAll(ctx, path, data, coord.Persistent)
		if !errors.Is(err, coord.ErrNodeExists) {
			return err
		}
		// Created concurrently (another member committing during a
		// hand-over): overwrite with ours.
	}
}

// RangeAssign is Kafka's range assignment of one topic: partitions and
// consumer ids are sorted, each consumer gets a contiguous range of
// |P|/|C| partitions, and the first |P| mod |C| consumers one more, so
// that every partition has an owner (Algorithm 1 as printed in the paper
// leaves the remainder unowned). It returns consumer id -> partitions;
// consumers that get nothing are absent.
func RangeAssign(partitions []int32, consumers []string) map[string][]int32 {
	ps := append([]int32(nil), partitions...)
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	cs := append([]string(nil), consumers...)
	sort.Strings(cs)
	out := map[string][]int32{}
	if len(cs) == 0 {
		return out
	}
	per, extra := len(ps)/len(cs), len(ps)%len(cs)
	for i, c := range cs {
		start := per*i + min(i, extra)
		n := per
		if i < extra {
			n++
		}
		if n > 0 {
			out[c] = ps[start : start+n]
		}
	}
	return out
}
