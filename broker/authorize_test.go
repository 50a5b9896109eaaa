package broker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/pki"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// aclBroker is a standalone broker on one mutual-TLS listener whose
// principals are the client certificates' CNs (User:admin, a super user;
// User:alice; User:bob), with the authorizer on.
type aclBroker struct {
	*testBroker
	f           *tlsFiles
	addr        string
	leaves      map[string]*pki.Leaf
	certs, keys map[string]string
}

func newACLBroker(t *testing.T, extra map[string]string) *aclBroker {
	t.Helper()
	f := newTLSFiles(t)
	props := map[string]string{
		"broker.id": "1", "log.dirs": t.TempDir(),
		"listeners":                      "SSL://127.0.0.1:0",
		"security.inter.broker.protocol": "SSL",
		"ssl.keystore.location":          f.keystore,
		"ssl.truststore.location":        f.caPEM,
		"ssl.client.auth":                "required",
		"ssl.principal.mapping.rules":    `RULE:^CN=([^,]*).*$/$1/,DEFAULT`,
		"authorizer.class.name":          "kafka.security.authorizer.AclAuthorizer",
		"super.users":                    "User:admin;User:broker",
	}
	for k, v := range extra {
		props[k] = v
	}
	cfg, warnings, err := config.FromProperties(props)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("config: %v %v", err, warnings)
	}
	cfg.RetentionCheckInterval = time.Hour
	ab := &aclBroker{f: f, leaves: map[string]*pki.Leaf{}, certs: map[string]string{}, keys: map[string]string{}}
	for _, u := range []string{"admin", "alice", "bob"} {
		l, err := f.ca.Issue(pki.Options{CommonName: u, Client: true})
		if err != nil {
			t.Fatal(err)
		}
		ab.leaves[u] = l
		ab.certs[u], ab.keys[u] = f.path(u+".crt"), f.path(u+".key")
		if err := os.WriteFile(ab.certs[u], l.CertPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(ab.keys[u], l.KeyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ab.testBroker = startTestBroker(t, cfg)
	ab.addr = ab.ListenerAddr("SSL")
	return ab
}

func (ab *aclBroker) client(t *testing.T, user string, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, ab.addr, append([]kgo.Opt{kgo.DialTLSConfig(ab.f.clientTLS(ab.leaves[user]))}, opts...)...)
}

// grant stores bindings through CreateAcls as admin and waits for the
// broker's cache to apply them.
func (ab *aclBroker) grant(t *testing.T, ctx context.Context, bindings ...acl.Binding) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, bd := range bindings {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName = kmsg.ACLResourceType(bd.Pattern.Type), bd.Pattern.Name
		c.ResourcePatternType = kmsg.ACLResourcePatternType(bd.Pattern.Pattern)
		c.Principal, c.Host = bd.Entry.Principal, bd.Entry.Host
		c.Operation, c.PermissionType = kmsg.ACLOperation(bd.Entry.Operation), kmsg.ACLPermissionType(bd.Entry.Permission)
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(ctx, ab.client(t, "admin"))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Results {
		if r.ErrorCode != 0 {
			t.Fatalf("CreateAcls %v: %v %v", bindings[i], kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
	}
}

func allowACL(t acl.ResourceType, name string, pt acl.PatternType, principal string, op acl.Operation) acl.Binding {
	return acl.Binding{Pattern: acl.Pattern{Type: t, Name: name, Pattern: pt},
		Entry: acl.Entry{Principal: principal, Host: "*", Operation: op, Permission: acl.Allow}}
}

func topicACL(name string, op acl.Operation) acl.Binding {
	return allowACL(acl.ResourceTopic, name, acl.PatternLiteral, "User:alice", op)
}

func groupACL(name string, op acl.Operation) acl.Binding {
	return allowACL(acl.ResourceGroup, name, acl.PatternLiteral, "User:alice", op)
}

// txnACL grants alice op on the case's transactional id (its topic name).
func txnACL(op acl.Operation) acl.Binding {
	return allowACL(acl.ResourceTransactionalID, "", acl.PatternLiteral, "User:alice", op)
}

func clusterACL(op acl.Operation) acl.Binding {
	return allowACL(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, "User:alice", op)
}

var authCodes = map[int16]bool{
	kerr.TopicAuthorizationFailed.Code: true, kerr.GroupAuthorizationFailed.Code: true,
	kerr.ClusterAuthorizationFailed.Code: true, kerr.TransactionalIDAuthorizationFailed.Code: true,
}

// TestAuthorizationMatrix: for each API we serve, User:bob without ACLs
// gets the API's authorization error, and User:alice, after the ACL Kafka
// requires is granted (each case its own topic or group), gets past the
// authorizer.
func TestAuthorizationMatrix(t *testing.T) {
	ab := newACLBroker(t, nil)
	ctx := testenv.Context(t, 3*time.Minute)
	admin := ab.client(t, "admin")
	for i := range 30 {
		createTopic(t, ctx, admin, fmt.Sprintf("m%d", i), 1)
	}
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "m0", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	type apiCase struct {
		name  string
		grant []acl.Binding
		want  *kerr.Error
		// call sends the request and returns the code that matters.
		call func(cl *kgo.Client, topic, group string) (int16, error)
	}
	cases := []apiCase{
		{"Produce", nil, kerr.TopicAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = 1, 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Topics[0].Partitions[0].ErrorCode, nil
		}},
		{"Fetch", nil, kerr.TopicAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 10, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Topics[0].Partitions[0].ErrorCode, nil
		}},
		{"ListOffsets", nil, kerr.TopicAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrListOffsetsRequest()
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Topics[0].Partitions[0].ErrorCode, nil
		}},
		{"Metadata", nil, kerr.TopicAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Topics[0].ErrorCode, nil
		}},
		{"OffsetForLeaderEpoch", nil, kerr.TopicAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Topics[0].Partitions[0].ErrorCode, nil
		}},
		{"CreateTopics", nil, kerr.TopicAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrCreateTopicsRequest()
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "new-"+topic, 1, 1
			req.Topics = append(req.Topics, rt)
			req.TimeoutMillis = 30000
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Topics[0].ErrorCode, nil
		}},
		{"DeleteTopics", nil, kerr.TopicAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrDeleteTopicsRequest()
			req.TopicNames = []string{topic}
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			req.TimeoutMillis = 30000
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Topics[0].ErrorCode, nil
		}},
		{"DescribeConfigs", nil, kerr.TopicAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrDescribeConfigsRequest()
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
			req.Resources = append(req.Resources, rr)
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Resources[0].ErrorCode, nil
		}},
		{"IncrementalAlterConfigs", nil, kerr.TopicAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("100000")
			rr.Configs = append(rr.Configs, c)
			req.Resources = append(req.Resources, rr)
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Resources[0].ErrorCode, nil
		}},
		{"CreatePartitions", nil, kerr.TopicAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrCreatePartitionsRequest()
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = topic, 2
			req.Topics = append(req.Topics, rt)
			req.TimeoutMillis = 30000
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Topics[0].ErrorCode, nil
		}},
		{"DeleteRecords", nil, kerr.TopicAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrDeleteRecordsRequest()
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Offset = 0
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			req.TimeoutMillis = 30000
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Topics[0].Partitions[0].ErrorCode, nil
		}},
		{"FindCoordinator", nil, kerr.GroupAuthorizationFailed, func(cl *kgo.Client, _, group string) (int16, error) {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey, req.CoordinatorKeys = group, []string{group}
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			if len(resp.Coordinators) > 0 {
				return resp.Coordinators[0].ErrorCode, nil
			}
			return resp.ErrorCode, nil
		}},
		{"JoinGroup", nil, kerr.GroupAuthorizationFailed, func(cl *kgo.Client, _, group string) (int16, error) {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group, req.ProtocolType, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = "range"
			req.Protocols = append(req.Protocols, p)
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.ErrorCode, nil
		}},
		{"Heartbeat", nil, kerr.GroupAuthorizationFailed, func(cl *kgo.Client, _, group string) (int16, error) {
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.MemberID = group, "nobody"
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.ErrorCode, nil
		}},
		{"OffsetCommit/group", []acl.Binding{topicACL("", acl.OpRead)}, kerr.GroupAuthorizationFailed, func(cl *kgo.Client, topic, group string) (int16, error) {
			return offsetCommitCode(ctx, cl, topic, group)
		}},
		{"OffsetCommit/topic", []acl.Binding{groupACL("", acl.OpRead)}, kerr.TopicAuthorizationFailed, func(cl *kgo.Client, topic, group string) (int16, error) {
			return offsetCommitCode(ctx, cl, topic, group)
		}},
		{"OffsetFetch", []acl.Binding{topicACL("", acl.OpDescribe)}, kerr.GroupAuthorizationFailed, func(cl *kgo.Client, topic, group string) (int16, error) {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Group = group
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{0}
			req.Topics = append(req.Topics, rt)
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = group
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = topic, []int32{0}
			rg.Topics = append(rg.Topics, gt)
			req.Groups = append(req.Groups, rg)
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			if resp.Version >= 8 && len(resp.Groups) > 0 {
				return resp.Groups[0].ErrorCode, nil
			}
			return resp.ErrorCode, nil
		}},
		{"DescribeGroups", nil, kerr.GroupAuthorizationFailed, func(cl *kgo.Client, _, group string) (int16, error) {
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Groups = []string{group}
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Groups[0].ErrorCode, nil
		}},
		{"DeleteGroups", nil, kerr.GroupAuthorizationFailed, func(cl *kgo.Client, _, group string) (int16, error) {
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.Groups = []string{group}
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Groups[0].ErrorCode, nil
		}},
		{"InitProducerID", []acl.Binding{clusterACL(acl.OpIdempotentWrite)}, kerr.ClusterAuthorizationFailed, func(cl *kgo.Client, _, _ string) (int16, error) {
			resp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.ErrorCode, nil
		}},
		// Transactional ids: the case's topic name is its id.
		{"InitProducerID/txn", []acl.Binding{txnACL(acl.OpWrite)}, kerr.TransactionalIDAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(topic), 10000
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.ErrorCode, nil
		}},
		{"FindCoordinator/txn", []acl.Binding{txnACL(acl.OpDescribe)}, kerr.TransactionalIDAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrFindCoordinatorRequest() // v4: batched keys
			req.CoordinatorType, req.CoordinatorKeys = 1, []string{topic}
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Coordinators[0].ErrorCode, nil
		}},
		{"EndTxn", []acl.Binding{txnACL(acl.OpWrite)}, kerr.TransactionalIDAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = topic, 1, 0
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.ErrorCode, nil
		}},
		{"DescribeTransactions", []acl.Binding{txnACL(acl.OpDescribe)}, kerr.TransactionalIDAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrDescribeTransactionsRequest()
			req.TransactionalIDs = []string{topic}
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.TransactionStates[0].ErrorCode, nil
		}},
		{"DescribeCluster", []acl.Binding{clusterACL(acl.OpDescribe)}, kerr.ClusterAuthorizationFailed, func(cl *kgo.Client, _, _ string) (int16, error) {
			resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.ErrorCode, nil
		}},
		{"DescribeAcls", []acl.Binding{clusterACL(acl.OpDescribe)}, kerr.ClusterAuthorizationFailed, func(cl *kgo.Client, _, _ string) (int16, error) {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.ErrorCode, nil
		}},
		{"CreateAcls", []acl.Binding{clusterACL(acl.OpAlter)}, kerr.ClusterAuthorizationFailed, func(cl *kgo.Client, topic, _ string) (int16, error) {
			req := kmsg.NewPtrCreateACLsRequest()
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "x-"+topic, kmsg.ACLResourcePatternTypeLiteral
			c.Principal, c.Host, c.Operation, c.PermissionType = "User:carol", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, c)
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.Results[0].ErrorCode, nil
		}},
		{"DescribeUserScramCredentials", []acl.Binding{clusterACL(acl.OpDescribe)}, kerr.ClusterAuthorizationFailed, func(cl *kgo.Client, _, _ string) (int16, error) {
			resp, err := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest().RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.ErrorCode, nil
		}},
		{"DescribeLogDirs", []acl.Binding{clusterACL(acl.OpDescribe)}, kerr.ClusterAuthorizationFailed, func(cl *kgo.Client, _, _ string) (int16, error) {
			resp, err := kmsg.NewPtrDescribeLogDirsRequest().RequestWith(ctx, cl.Broker(1))
			if err != nil {
				return 0, err
			}
			return resp.ErrorCode, nil
		}},
	}
	// The operation each case grants alice when it names none.
	defaults := map[string][]acl.Binding{
		"Produce": {topicACL("", acl.OpWrite)}, "Fetch": {topicACL("", acl.OpRead)}, "ListOffsets": {topicACL("", acl.OpDescribe)},
		"Metadata": {topicACL("", acl.OpDescribe)}, "OffsetForLeaderEpoch": {topicACL("", acl.OpDescribe)},
		"CreateTopics": {clusterACL(acl.OpCreate)}, "DeleteTopics": {topicACL("", acl.OpDelete)},
		"DescribeConfigs": {topicACL("", acl.OpDescribeConfigs)}, "IncrementalAlterConfigs": {topicACL("", acl.OpAlterConfigs)},
		"CreatePartitions": {topicACL("", acl.OpAlter)}, "DeleteRecords": {topicACL("", acl.OpDelete)},
		"FindCoordinator": {groupACL("", acl.OpDescribe)}, "JoinGroup": {groupACL("", acl.OpRead)}, "Heartbeat": {groupACL("", acl.OpRead)},
		"DescribeGroups": {groupACL("", acl.OpDescribe)}, "DeleteGroups": {groupACL("", acl.OpDelete)},
	}
	needs := map[string][]acl.Binding{
		"OffsetCommit/group": {groupACL("", acl.OpRead)}, "OffsetCommit/topic": {topicACL("", acl.OpRead)},
		"OffsetFetch": {groupACL("", acl.OpDescribe)},
	}
	alice, bob := ab.client(t, "alice"), ab.client(t, "bob")
	for i, c := range cases {
		topic, group := fmt.Sprintf("m%d", i), fmt.Sprintf("g%d", i)
		// Bindings with an empty name are this case's topic or group.
		named := func(bs []acl.Binding) []acl.Binding {
			var out []acl.Binding
			for _, bd := range bs {
				if bd.Pattern.Name == "" {
					bd.Pattern.Name = topic
					if bd.Pattern.Type == acl.ResourceGroup {
						bd.Pattern.Name = group
					}
				}
				out = append(out, bd)
			}
			return out
		}
		// Both principals hold the case's other ACLs; only alice the one
		// under test.
		if len(c.grant) > 0 && needs[c.name] != nil {
			others := named(c.grant)
			for j := range others {
				bobs := others[j]
				bobs.Entry.Principal = "User:bob"
				ab.grant(t, ctx, others[j], bobs)
			}
		}
		code, err := c.call(bob, topic, group)
		if err != nil {
			t.Fatalf("%s as bob: %v", c.name, err)
		}
		if code != c.want.Code {
			t.Errorf("%s as bob: %v, want %v", c.name, kerr.ErrorForCode(code), c.want)
		}
		need := defaults[c.name]
		if need == nil {
			need = needs[c.name]
		}
		if need == nil {
			need = c.grant
		}
		ab.grant(t, ctx, named(need)...)
		code, err = c.call(alice, topic, group)
		if err != nil {
			t.Fatalf("%s as alice: %v", c.name, err)
		}
		if authCodes[code] {
			t.Errorf("%s as alice with %v: %v", c.name, named(need), kerr.ErrorForCode(code))
		}
	}
	if n := deniedCount(t, ab.testBroker, "Write", "Topic"); n < 1 {
		t.Errorf("authorization_failures_total{Write,Topic} = %v", n)
	}
}

func offsetCommitCode(ctx context.Context, cl *kgo.Client, topic, group string) (int16, error) {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = group, -1, ""
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		return 0, err
	}
	return resp.Topics[0].Partitions[0].ErrorCode, nil
}

// TestAuthorizationRules: Metadata lists only what the principal may
// Describe; deny overrides allow; a prefixed ACL covers a topic created
// after it; the super user passes without ACLs; with
// allow.everyone.if.no.acl.found=false a resource without ACLs is closed;
// kcat gets the authorization error, not a hang.
func TestAuthorizationRules(t *testing.T) {
	ab := newACLBroker(t, nil)
	ctx := testenv.Context(t, 3*time.Minute)
	admin := ab.client(t, "admin")
	for _, n := range []string{"visible", "hidden", "denied"} {
		createTopic(t, ctx, admin, n, 1)
	}
	ab.grant(t, ctx, topicACL("visible", acl.OpRead), topicACL("denied", acl.OpWrite),
		acl.Binding{Pattern: acl.Pattern{Type: acl.ResourceTopic, Name: "denied", Pattern: acl.PatternLiteral},
			Entry: acl.Entry{Principal: "User:*", Host: "*", Operation: acl.OpWrite, Permission: acl.Deny}},
		allowACL(acl.ResourceTopic, "logs-", acl.PatternPrefixed, "User:alice", acl.OpWrite))

	alice := ab.client(t, "alice")
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mt := range resp.Topics {
		names = append(names, *mt.Topic)
	}
	// "denied" is described (Write implies Describe, the deny is of Write).
	if strings.Join(names, ",") != "denied,visible" {
		t.Errorf("alice's Metadata lists %v, want denied and visible", names)
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "denied", Value: []byte("x")}).FirstErr(); err == nil ||
		!strings.Contains(err.Error(), kerr.TopicAuthorizationFailed.Message) {
		t.Errorf("produce to a topic with Allow and Deny Write: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// A prefixed ACL covers a topic created after it.
	createTopic(t, ctx, admin, "logs-new", 1)
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "logs-new", Value: []byte("x")}).FirstErr(); err != nil {
		t.Errorf("produce under the prefixed ACL: %v", err)
	}
	// The super user, without any ACL, produces to "hidden".
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "hidden", Value: []byte("x")}).FirstErr(); err != nil {
		t.Errorf("super user produce: %v", err)
	}
	// No ACL on "hidden": bob (and alice) are refused.
	bob := ab.client(t, "bob")
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "hidden", Value: []byte("x")}).FirstErr(); err == nil {
		t.Error("bob produced to a topic without ACLs")
	}
	// kcat as bob: an authorization error, promptly.
	args := []string{"-b", ab.addr, "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + ab.f.caPEM,
		"-X", "ssl.certificate.location=" + ab.certs["bob"], "-X", "ssl.key.location=" + ab.keys["bob"]}
	start := time.Now()
	out, kerrOut := runKcatErr(t, "x\n", append(args, "-P", "-t", "visible")...)
	if !strings.Contains(strings.ToLower(out+kerrOut), "authoriz") || time.Since(start) > 50*time.Second {
		t.Errorf("kcat produce as bob after %v: stdout %q stderr %q, want an authorization error", time.Since(start), out, kerrOut)
	}
}

// TestAllowEveryoneIfNoACL: with allow.everyone.if.no.acl.found=true a
// topic without ACLs is open, and one with ACLs is not.
func TestAllowEveryoneIfNoACL(t *testing.T) {
	ab := newACLBroker(t, map[string]string{"allow.everyone.if.no.acl.found": "true"})
	ctx := testenv.Context(t, 2*time.Minute)
	admin := ab.client(t, "admin")
	createTopic(t, ctx, admin, "open", 1)
	createTopic(t, ctx, admin, "guarded", 1)
	ab.grant(t, ctx, topicACL("guarded", acl.OpWrite))
	bob := ab.client(t, "bob")
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "open", Value: []byte("x")}).FirstErr(); err != nil {
		t.Errorf("produce to a topic without ACLs: %v", err)
	}
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "guarded", Value: []byte("x")}).FirstErr(); err == nil {
		t.Error("bob produced to a topic whose ACLs do not name him")
	}
}

// createTopic creates a topic as cl, failing t on any error.
func createTopic(t *testing.T, ctx context.Context, cl *kgo.Client, name string, partitions int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Topics[0].ErrorCode; c != 0 {
		t.Fatalf("creating %s: %v", name, kerr.ErrorForCode(c))
	}
}

// runKcatErr runs kcat, which may fail, and returns its output.
func runKcatErr(t *testing.T, stdin string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.Kcat(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return out.String(), errb.String()
}

// deniedCount reads tributary_broker_authorization_failures_total.
func deniedCount(t *testing.T, tb *testBroker, op, resourceType string) float64 {
	t.Helper()
	mfs, err := tb.Broker.gather.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "tributary_broker_authorization_failures_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["operation"] == op && labels["resource_type"] == resourceType {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
