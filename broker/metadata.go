package broker

import (
	"context"
	"errors"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterID is reported in Metadata v2+. A single broker is its own cluster.
const clusterID = "tributary"

// handleMetadata describes this one broker and the requested topics (all of
// them when the list is null, or empty in v0), auto-creating unknown topics
// when auto.create.topics.enable is on and the client allows it (v4+).
func (b *Broker) handleMetadata(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Default()
	resp.SetVersion(req.Version)

	br := kmsg.NewMetadataResponseBroker()
	br.NodeID, br.Host, br.Port = b.cfg.BrokerID, b.advHost, b.advPort
	resp.Brokers = append(resp.Brokers, br)
	resp.ClusterID = kmsg.StringPtr(clusterID)
	resp.ControllerID = b.cfg.BrokerID

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		b.mu.RLock()
		names := make([]string, 0, len(b.topics))
		for n := range b.topics {
			names = append(names, n)
		}
		b.mu.RUnlock()
		sort.Strings(names)
		for _, n := range names {
			if t := b.lookup(n); t != nil {
				resp.Topics = append(resp.Topics, b.describeTopic(t))
			}
		}
		return kmsgReply{resp}, nil
	}

	autoCreate := !b.cfg.DisableAutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			// Lookup by topic id (v12+): topic ids are not kept.
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		name := *rt.Topic
		t := b.lookup(name)
		if t == nil && autoCreate {
			var err error
			t, err = b.createTopic(name, 0, true)
			if err != nil {
				b.logger.Warn("auto-creating topic failed", "topic", name, "err", err)
			}
		}
		if t != nil {
			resp.Topics = append(resp.Topics, b.describeTopic(t))
			continue
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(name)
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		if err := validateTopicName(name); err != nil {
			mt.ErrorCode = kerr.InvalidTopicException.Code
		} else if errors.Is(b.shutdownCtx.Err(), context.Canceled) {
			mt.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return kmsgReply{resp}, nil
}

func (b *Broker) describeTopic(t *topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(t.name)
	for _, p := range t.partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.index
		mp.Leader = b.cfg.BrokerID
		// Leader epochs are not tracked: -1 tells clients not to fence on them.
		mp.LeaderEpoch = -1
		mp.Replicas = []int32{b.cfg.BrokerID}
		mp.ISR = []int32{b.cfg.BrokerID}
		mp.OfflineReplicas = []int32{}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
