package broker

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/group"
)

// clusterID is reported in Metadata v2+.
const clusterID = "tributary"

// autoCreateWait bounds how long a Metadata request waits for the leaders
// of a topic it auto-created; past it the client sees LEADER_NOT_AVAILABLE
// and asks again.
const autoCreateWait = 10 * time.Second

// handleMetadata describes the live brokers and the requested topics (all
// of them when the list is null, or empty in v0) from the cluster metadata,
// auto-creating unknown topics when auto.create.topics.enable is on and the
// client allows it (v4+).
func (b *Broker) handleMetadata(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	resp.ClusterID = kmsg.StringPtr(clusterID)

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	autoCreate := !b.cfg.DisableAutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	snap := b.metadata()
	// autoErr holds the code for topics whose auto-creation was refused
	// (controller.mutation.rate) or whose partitions cannot open here.
	var autoErr map[string]int16
	// Only the topics the principal may Describe are shown; a named one it
	// may not is TOPIC_AUTHORIZATION_FAILED, and so is one it may not
	// create (Create on the cluster or the topic), as in Kafka.
	describe := b.topicAuthorizer(r, acl.OpDescribe)
	var mayCreate *bool
	if !all && autoCreate {
		for _, rt := range req.Topics {
			if rt.Topic == nil || validateTopicName(*rt.Topic) != nil || !describe.allowed(*rt.Topic) {
				continue
			}
			if _, ok := snap.Topics[*rt.Topic]; ok {
				continue
			}
			if mayCreate == nil {
				ok := b.authorizeQuiet(r, acl.OpCreate, acl.ResourceCluster, acl.ClusterName)
				mayCreate = &ok
			}
			if !*mayCreate && !b.authorizeTopic(r, acl.OpCreate, *rt.Topic) {
				if autoErr == nil {
					autoErr = map[string]int16{}
				}
				autoErr[*rt.Topic] = errTopicAuth.Code
				continue
			}
			code, err := b.autoCreateTopic(ctx, r, *rt.Topic)
			if code != 0 {
				if autoErr == nil {
					autoErr = map[string]int16{}
				}
				autoErr[*rt.Topic] = code
			}
			if err != nil {
				b.res.logs.log(slog.LevelWarn, "auto-create-failed", "auto-creating topic failed", "topic", *rt.Topic, "err", err)
			}
			snap = b.metadata()
		}
	}
	b.describeBrokers(resp, snap, b.requestListener(r))

	if all {
		for _, n := range snap.TopicNames() {
			if b.authorizeQuiet(r, acl.OpDescribe, acl.ResourceTopic, n) {
				resp.Topics = append(resp.Topics, b.describeTopic(snap, snap.Topics[n]))
			}
		}
		return kmsgReply{resp}, nil
	}
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			// Lookup by topic id (v12+).
			if t, ok := topicByWireID(snap, rt.TopicID); ok && describe.allowed(t.Name) {
				resp.Topics = append(resp.Topics, b.describeTopic(snap, t))
				continue
			} else if ok {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = errTopicAuth.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		name := *rt.Topic
		if validateTopicName(name) == nil && !describe.allowed(name) {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = kmsg.StringPtr(name)
			mt.ErrorCode = errTopicAuth.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if t, ok := snap.Topics[name]; ok {
			mt := b.describeTopic(snap, t)
			if code, failed := autoErr[name]; failed {
				mt.ErrorCode = code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(name)
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		if code, failed := autoErr[name]; failed && code == errTopicAuth.Code {
			mt.ErrorCode = code
		} else if err := validateTopicName(name); err != nil {
			mt.ErrorCode = kerr.InvalidTopicException.Code
		} else if errors.Is(b.shutdownCtx.Err(), context.Canceled) {
			mt.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return kmsgReply{resp}, nil
}

// describeBrokers lists the live brokers at their advertised addresses on
// the listener the request came in on (brokers without that listener are
// left out, as Kafka does), this one included even while its registration
// is being renewed, and the controller.
func (b *Broker) describeBrokers(resp *kmsg.MetadataResponse, snap cluster.Snapshot, listener string) {
	self := false
	for _, sb := range snap.Brokers {
		host, port, ok := b.endpointOf(sb, listener)
		if !ok {
			continue
		}
		br := kmsg.NewMetadataResponseBroker()
		br.NodeID, br.Host, br.Port = sb.ID, host, port
		if sb.Rack != "" {
			br.Rack = kmsg.StringPtr(sb.Rack)
		}
		if sb.ID == b.cfg.BrokerID {
			self = true
		}
		resp.Brokers = append(resp.Brokers, br)
	}
	if host, port, ok := b.endpointOf(cluster.Broker{ID: b.cfg.BrokerID}, listener); !self && ok {
		br := kmsg.NewMetadataResponseBroker()
		br.NodeID, br.Host, br.Port = b.cfg.BrokerID, host, port
		resp.Brokers = append(resp.Brokers, br)
	}
	resp.ControllerID = snap.Controller
}

// describeTopic reports each partition's leader, replicas and ISR. A
// leader that is not a live broker (the controller has not caught up with
// its death yet) is reported as none: LEADER_NOT_AVAILABLE and leader -1.
func (b *Broker) describeTopic(snap cluster.Snapshot, t cluster.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(t.Name)
	mt.TopicID = wireTopicID(t.ID)
	mt.IsInternal = t.Name == group.OffsetsTopic
	live := func(id int32) bool {
		_, ok := snap.Broker(id)
		return ok || id == b.cfg.BrokerID
	}
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.ID
		mp.Leader = p.Leader
		if p.Leader < 0 || !live(p.Leader) {
			mp.Leader = -1
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		// The epoch the leader serves under (KIP-320): clients send it back
		// in Fetch and OffsetForLeaderEpoch, and the leader fences stale
		// ones (FENCED_LEADER_EPOCH) so that they refresh their metadata.
		mp.LeaderEpoch = p.LeaderEpoch
		mp.Replicas = slices.Clone(p.Replicas)
		if mp.Replicas == nil {
			mp.Replicas = []int32{}
		}
		mp.ISR = slices.Clone(p.ISR)
		if mp.ISR == nil {
			mp.ISR = []int32{}
		}
		mp.OfflineReplicas = []int32{}
		for _, r := range p.Replicas {
			if !live(r) {
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
