package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/broker/quota"
)

// maxPartitionsPerTopic bounds one request's work (config's).
const maxPartitionsPerTopic = config.MaxPartitionsPerTopic

// handleCreateTopics creates topics through the cluster: the assignment
// goes to the coordinator and the controller elects the leaders; each topic
// is answered once its partitions have leaders (and this broker serves the
// ones it leads) or the request's timeout passes. Replication factor -1
// means default.replication.factor (for the audit topic
// audit.topic.replication.factor capped at the live brokers, see
// AuditTopic); it may not exceed the live brokers.
// An explicit replica assignment gives the partition count and is only
// honoured when it names this broker alone and this broker is the only one
// alive (it is then what the round-robin assignment gives). Topic configs
// are validated (INVALID_CONFIG names the key), stored with the topic in
// the cluster and applied by every broker that opens its partitions; v5+
// responses list the topic's effective configs.
func (b *Broker) handleCreateTopics(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	resp.SetVersion(req.Version)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	snap := b.metadata()
	// Create on the cluster, or else on each topic (Kafka's rule).
	mayCreateAll := b.authorizeQuiet(r, acl.OpCreate, acl.ResourceCluster, acl.ClusterName)
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		fail := func(e *kerr.Error, msg string) {
			st.ErrorCode = e.Code
			st.ErrorMessage = kmsg.StringPtr(msg)
		}
		n := rt.NumPartitions
		if len(rt.ReplicaAssignment) > 0 {
			n = int32(len(rt.ReplicaAssignment))
		}
		defaultN, defaultRF := creationDefaults(b.cfg, rt.Topic, len(snap.Brokers))
		rf := rt.ReplicationFactor
		if rf == -1 {
			rf = defaultRF
		}
		overrides, cfgCode, cfgErr := b.requestTopicConfigs(rt.Configs)
		switch {
		case seen[rt.Topic] > 1:
			fail(kerr.InvalidRequest, "topic named more than once in the request")
		case !mayCreateAll && !b.authorizeTopic(r, acl.OpCreate, rt.Topic):
			fail(errTopicAuth, errTopicAuth.Message)
		case validateTopicName(rt.Topic) != nil:
			fail(kerr.InvalidTopicException, validateTopicName(rt.Topic).Error())
		case len(rt.ReplicaAssignment) > 0 && (rt.NumPartitions != -1 || rt.ReplicationFactor != -1):
			fail(kerr.InvalidRequest, "replica assignment given with partitions or replication factor")
		case !b.assignmentIsLocal(snap, rt.ReplicaAssignment):
			fail(kerr.InvalidReplicaAssignment, fmt.Sprintf(
				"explicit replica assignments are only supported on a one-broker cluster, naming broker %d", b.cfg.BrokerID))
		case rf < 1 && len(rt.ReplicaAssignment) == 0:
			fail(kerr.InvalidReplicationFactor, fmt.Sprintf("replication factor %d must be positive", rt.ReplicationFactor))
		case int(rf) > len(snap.Brokers) && len(rt.ReplicaAssignment) == 0:
			fail(kerr.InvalidReplicationFactor, fmt.Sprintf(
				"replication factor: %d larger than available brokers: %d", rf, len(snap.Brokers)))
		case n == 0 || n < -1:
			fail(kerr.InvalidPartitions, fmt.Sprintf("number of partitions %d must be positive", n))
		case n > maxPartitionsPerTopic:
			fail(kerr.InvalidPartitions, fmt.Sprintf("number of partitions %d is over this broker's limit of %d", n, maxPartitionsPerTopic))
		case cfgErr != "":
			fail(cfgCode, cfgErr)
		case req.ValidateOnly:
			if _, ok := snap.Topics[rt.Topic]; ok {
				fail(kerr.TopicAlreadyExists, "Topic '"+rt.Topic+"' already exists.")
			} else if err := cluster.ValidateTopicName(rt.Topic); err != nil {
				fail(kerr.InvalidTopicException, err.Error())
			}
		default:
			parts := n
			if parts <= 0 {
				parts = defaultN
			}
			if wait := b.takeMutationQuota(ctx, r, int(parts)); wait > 0 {
				b.res.throttled.Inc()
				fail(kerr.ThrottlingQuotaExceeded, fmt.Sprintf(
					"controller.mutation.rate exceeded: creating %d partitions; retry in %v", parts, wait))
				resp.ThrottleMillis = max(resp.ThrottleMillis, int32(wait.Milliseconds()))
				break
			}
			if err := b.createTopicReported(ctx, rt.Topic, n, rf, overrides, false); err != nil {
				st.ErrorCode, st.ErrorMessage = adminErrorCode(err), kmsg.StringPtr(err.Error())
				if errors.Is(err, ErrTopicExists) {
					// Kafka's TopicExistsException text, not our wrapped chain.
					st.ErrorMessage = kmsg.StringPtr("Topic '" + rt.Topic + "' already exists.")
				}
				if errors.Is(err, partition.ErrOpen) {
					// The topic exists; its partition comes online by itself
					// once the cause (descriptors, disk) goes away.
					st.ErrorCode = kerr.KafkaStorageError.Code
					st.ErrorMessage = kmsg.StringPtr(err.Error() + "; the topic exists and the broker retries opening it with back-off")
				}
			}
		}
		if st.ErrorCode == 0 {
			if n <= 0 {
				n = defaultN
			}
			st.NumPartitions, st.ReplicationFactor = n, rf
			st.Configs = b.createdTopicConfigs(overrides)
			if !req.ValidateOnly {
				st.TopicID = wireTopicID(b.metadata().Topics[rt.Topic].ID)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kmsgReply{resp}, nil
}

// requestTopicConfigs turns a CreateTopics topic's configs into overrides
// and checks them; on failure it returns the error code and Kafka's message.
func (b *Broker) requestTopicConfigs(cs []kmsg.CreateTopicsRequestTopicConfig) (map[string]string, *kerr.Error, string) {
	overrides := make(map[string]string, len(cs))
	for _, c := range cs {
		if _, dup := overrides[c.Name]; dup {
			return nil, kerr.InvalidRequest, "config " + c.Name + " is given more than once"
		}
		if c.Value == nil {
			return nil, kerr.InvalidConfig, "Null value not supported for topic configs: " + c.Name
		}
		overrides[c.Name] = *c.Value
	}
	if _, err := config.ResolveTopic(b.topicDefaults(), overrides); err != nil {
		return nil, kerr.InvalidConfig, strings.TrimPrefix(err.Error(), config.ErrInvalidTopicConfig.Error()+": ")
	}
	return overrides, nil, ""
}

// createdTopicConfigs lists a new topic's effective configs, as Kafka's
// CreateTopics v5+ response does.
func (b *Broker) createdTopicConfigs(overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	var out []kmsg.CreateTopicsResponseTopicConfig
	for _, e := range b.topicConfigEntries(overrides) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.Source = e.name, kmsg.StringPtr(e.value), int8(e.source)
		out = append(out, c)
	}
	return out
}

func (b *Broker) assignmentIsLocal(snap cluster.Snapshot, as []kmsg.CreateTopicsRequestTopicReplicaAssignment) bool {
	if len(as) == 0 {
		return true
	}
	for _, br := range snap.Brokers {
		if br.ID != b.cfg.BrokerID {
			return false
		}
	}
	for _, a := range as {
		if len(a.Replicas) != 1 || a.Replicas[0] != b.cfg.BrokerID {
			return false
		}
	}
	return true
}

// requestTimeout bounds an admin request's wait by its timeout_ms; zero or
// less means adminWait.
func requestTimeout(ctx context.Context, ms int32) (context.Context, context.CancelFunc) {
	d := adminWait
	if ms > 0 {
		d = time.Duration(ms) * time.Millisecond
	}
	return context.WithTimeout(ctx, d)
}

// quotaErrorVersion is, per API charged to controller.mutation.rate, the
// first version whose clients understand THROTTLING_QUOTA_EXCEEDED.
var quotaErrorVersion = map[int16]int16{
	int16(kmsg.CreateTopics):     6,
	int16(kmsg.CreatePartitions): 3,
}

// takeMutationQuota charges n partitions to the request's client id under
// controller.mutation.rate (KIP-599). CreateTopics v6+ (CreatePartitions
// v3+) learns of an exceeded quota at once (THROTTLING_QUOTA_EXCEEDED and
// the time to wait); older versions cannot, so, as Kafka does, their request is held until the
// quota allows it or the request's timeout ends. It returns the wait when
// the request is refused, 0 when granted.
func (b *Broker) takeMutationQuota(ctx context.Context, r *request, n int) time.Duration {
	// A controller_mutation_rate client quota replaces the broker-wide
	// rate for the requests it matches (0 blocks, as in Kafka).
	key, rate := "", b.res.quota.rate
	if r.clientID != nil {
		key = *r.clientID
	}
	if limit, tags, ok := b.quotas.limit(r, quota.ControllerMutationRate); ok {
		key, rate = "quota\x00"+tags.User+"\x00"+tags.Client, max(limit, 1e-6)
	}
	for {
		wait := b.res.quota.takeAt(key, rate, n)
		if wait == 0 || r.version >= quotaErrorVersion[r.key] {
			return wait
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return wait
		}
	}
}

// autoCreateTopic creates a topic a Metadata request named (with
// auto.create.topics.enable, Kafka's default: any client that can connect
// creates topics by asking for them, which is why it is charged to the
// client's controller.mutation.rate). It returns the topic's error code
// for the response: UNKNOWN_TOPIC_OR_PARTITION (retriable) when the quota
// refused, KAFKA_STORAGE_ERROR when a partition cannot be opened here.
func (b *Broker) autoCreateTopic(ctx context.Context, r *request, name string) (int16, error) {
	client := ""
	if r.clientID != nil {
		client = *r.clientID
	}
	n, _ := creationDefaults(b.cfg, name, len(b.metadata().Brokers))
	if wait := b.res.quota.take(client, int(n)); wait > 0 {
		b.res.throttled.Inc()
		b.res.logs.log(slog.LevelInfo, "auto-create-throttled", "auto-creation refused by controller.mutation.rate",
			"client_id", client, "topic", name, "retry_in", wait)
		return kerr.UnknownTopicOrPartition.Code, nil
	}
	cctx, cancel := context.WithTimeout(ctx, autoCreateWait)
	defer cancel()
	err := b.createTopicReported(cctx, name, 0, 0, nil, true)
	if errors.Is(err, partition.ErrOpen) {
		return kerr.KafkaStorageError.Code, err
	}
	return 0, err
}
