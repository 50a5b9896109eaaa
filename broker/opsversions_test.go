package broker

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestOpsAPIVersions sends every advertised version of the operations
// APIs (issue 29) over a raw connection to one broker.
func TestOpsAPIVersions(t *testing.T) {
	b := newTestBroker(t, nil)
	c := dialRaw(t, b.Addr())
	ctx := testenv.Context(t, time.Minute)
	spec := func(k kmsg.Key) apiSpec { return apiTable[int16(k)] }

	// CreatePartitions: each version grows "cp" by one partition, then is
	// refused a count that is not larger.
	if err := b.CreateTopic(ctx, "cp", 1); err != nil {
		t.Fatal(err)
	}
	count := int32(1)
	for v := spec(kmsg.CreatePartitions).min; v <= spec(kmsg.CreatePartitions).max; v++ {
		count++
		for i, want := range []*kerr.Error{nil, kerr.InvalidPartitions} {
			n := count
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.SetVersion(v)
			req.TimeoutMillis = 30_000
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = "cp", n
			req.Topics = append(req.Topics, rt)
			resp := c.roundTrip(req).(*kmsg.CreatePartitionsResponse)
			got := resp.Topics[0].ErrorCode
			if len(b.replication.Slots("cp")) != int(count) {
				t.Fatalf("CreatePartitions v%d to %d: error %d, %d partitions served", v, n, got, len(b.replication.Slots("cp")))
			}
			if (want == nil && got != 0) || (want != nil && got != want.Code) {
				t.Fatalf("CreatePartitions v%d to %d (attempt %d): error %v, want %v", v, n, i+1, kerr.ErrorForCode(got), want)
			}
		}
	}
}

// TestOpsAPIVersionsElectLeaders: every version of ElectLeaders, on a
// broker that is its own controller and leads every partition.
func TestOpsAPIVersionsElectLeaders(t *testing.T) {
	b := newTestBroker(t, nil)
	c := dialRaw(t, b.Addr())
	if err := b.CreateTopic(testenv.Context(t, time.Minute), "el", 2); err != nil {
		t.Fatal(err)
	}
	spec := apiTable[int16(kmsg.ElectLeaders)]
	for v := spec.min; v <= spec.max; v++ {
		for _, typ := range []int8{0, 1} {
			if v == 0 && typ == 1 {
				continue // v0 elects the preferred replica only
			}
			req := kmsg.NewPtrElectLeadersRequest()
			req.SetVersion(v)
			req.ElectionType, req.TimeoutMillis = typ, 30_000
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = "el", []int32{0, 1, 7}
			req.Topics = append(req.Topics, rt)
			resp := c.roundTrip(req).(*kmsg.ElectLeadersResponse)
			if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
				t.Fatalf("ElectLeaders v%d type %d: %+v", v, typ, resp)
			}
			for _, p := range resp.Topics[0].Partitions {
				want := kerr.ElectionNotNeeded.Code
				if p.Partition == 7 {
					want = kerr.UnknownTopicOrPartition.Code
				}
				if p.ErrorCode != want {
					t.Fatalf("ElectLeaders v%d type %d partition %d: %v, want %v", v, typ, p.Partition, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(want))
				}
			}
			// Null topics: every partition, those needing no election left out.
			req.Topics = nil
			if resp := c.roundTrip(req).(*kmsg.ElectLeadersResponse); resp.ErrorCode != 0 || len(resp.Topics) != 0 {
				t.Fatalf("ElectLeaders v%d type %d, all partitions: %+v", v, typ, resp)
			}
		}
	}
}

// TestOpsAPIVersionsDeleteRecords: every version of DeleteRecords moves
// the log start one further; past the high watermark is refused.
func TestOpsAPIVersionsDeleteRecords(t *testing.T) {
	b := newTestBroker(t, nil)
	c := dialRaw(t, b.Addr())
	if err := b.CreateTopic(testenv.Context(t, time.Minute), "dr", 1); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		resp := c.roundTrip(produceRequest(9, -1, "dr", 0, makeBatch(int64(i), -1, -1, -1, "x"))).(*kmsg.ProduceResponse)
		if resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("produce: %+v", resp.Topics[0].Partitions[0])
		}
	}
	spec := apiTable[int16(kmsg.DeleteRecords)]
	for v := spec.min; v <= spec.max; v++ {
		for _, off := range []int64{int64(v) + 1, 11} {
			req := kmsg.NewPtrDeleteRecordsRequest()
			req.SetVersion(v)
			req.TimeoutMillis = 30_000
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = "dr"
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Offset = off
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			got := c.roundTrip(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
			switch {
			case off == 11 && got.ErrorCode != kerr.OffsetOutOfRange.Code:
				t.Fatalf("DeleteRecords v%d past the high watermark: %v", v, kerr.ErrorForCode(got.ErrorCode))
			case off != 11 && (got.ErrorCode != 0 || got.LowWatermark != off):
				t.Fatalf("DeleteRecords v%d to %d: %v, low watermark %d", v, off, kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
			}
		}
		if start := b.replication.Slots("dr")[0].Log().StartOffset(); start != int64(v)+1 {
			t.Fatalf("after DeleteRecords v%d: log start %d", v, start)
		}
	}
}

// TestOpsAPIVersionsLogDirsClusterConfigs: every version of
// DescribeLogDirs (sizes equal to the segment files), DescribeCluster and
// the legacy AlterConfigs.
func TestOpsAPIVersionsLogDirsClusterConfigs(t *testing.T) {
	b := newTestBroker(t, nil)
	c := dialRaw(t, b.Addr())
	ctx := testenv.Context(t, time.Minute)
	if err := b.CreateTopic(ctx, "ld", 2); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		c.roundTrip(produceRequest(9, -1, "ld", int32(i%2), makeBatch(int64(i), -1, -1, -1, "value", "other")))
	}
	fileBytes := func(p int32) int64 {
		matches, _ := filepath.Glob(filepath.Join(b.cfg.LogDirs[0], fmt.Sprintf("ld-%d", p), "*.log"))
		var n int64
		for _, m := range matches {
			st, err := os.Stat(m)
			if err != nil {
				t.Fatal(err)
			}
			n += st.Size()
		}
		return n
	}
	spec := apiTable[int16(kmsg.DescribeLogDirs)]
	for v := spec.min; v <= spec.max; v++ {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.SetVersion(v)
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = "ld", []int32{0, 1}
		req.Topics = append(req.Topics, rt)
		resp := c.roundTrip(req).(*kmsg.DescribeLogDirsResponse)
		if len(resp.Dirs) != 1 || resp.Dirs[0].Dir != b.cfg.LogDirs[0] || len(resp.Dirs[0].Topics) != 1 {
			t.Fatalf("DescribeLogDirs v%d: %+v", v, resp)
		}
		for _, p := range resp.Dirs[0].Topics[0].Partitions {
			if want := fileBytes(p.Partition); p.Size != want || want == 0 || p.OffsetLag != 0 {
				t.Fatalf("DescribeLogDirs v%d partition %d: size %d (files %d), lag %d", v, p.Partition, p.Size, want, p.OffsetLag)
			}
		}
		if v >= 4 && (resp.Dirs[0].TotalBytes <= 0 || resp.Dirs[0].UsableBytes <= 0) {
			t.Fatalf("DescribeLogDirs v%d: total %d usable %d", v, resp.Dirs[0].TotalBytes, resp.Dirs[0].UsableBytes)
		}
	}

	spec = apiTable[int16(kmsg.DescribeCluster)]
	for v := spec.min; v <= spec.max; v++ {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(v)
		req.EndpointType = 1
		resp := c.roundTrip(req).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 || resp.ClusterID != clusterID || resp.ControllerID != b.cfg.BrokerID ||
			len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != b.cfg.BrokerID || resp.Brokers[0].Port <= 0 {
			t.Fatalf("DescribeCluster v%d: %+v", v, resp)
		}
		if v >= 1 {
			req.EndpointType = 2
			if resp := c.roundTrip(req).(*kmsg.DescribeClusterResponse); resp.ErrorCode != kerr.UnsupportedEndpointType.Code {
				t.Fatalf("DescribeCluster v%d for controllers: %v", v, kerr.ErrorForCode(resp.ErrorCode))
			}
		}
	}

	// AlterConfigs replaces the overrides with exactly the given set.
	if err := b.CreateTopicWithConfigs(ctx, "ac", 1, map[string]string{"segment.ms": "3600000"}); err != nil {
		t.Fatal(err)
	}
	spec = apiTable[int16(kmsg.AlterConfigs)]
	for v := spec.min; v <= spec.max; v++ {
		alter := func(configs map[string]string) kmsg.AlterConfigsResponseResource {
			req := kmsg.NewPtrAlterConfigsRequest()
			req.SetVersion(v)
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "ac"
			for k, val := range configs {
				c := kmsg.NewAlterConfigsRequestResourceConfig()
				c.Name, c.Value = k, kmsg.StringPtr(val)
				rr.Configs = append(rr.Configs, c)
			}
			req.Resources = append(req.Resources, rr)
			return c.roundTrip(req).(*kmsg.AlterConfigsResponse).Resources[0]
		}
		want := map[string]string{"retention.ms": fmt.Sprint(1000 + v)}
		if got := alter(want); got.ErrorCode != 0 {
			t.Fatalf("AlterConfigs v%d: %v", v, kerr.ErrorForCode(got.ErrorCode))
		}
		awaitConfigs(t, b, "ac", want)
		if got := alter(map[string]string{"no.such.config": "1"}); got.ErrorCode != kerr.InvalidConfig.Code {
			t.Fatalf("AlterConfigs v%d, unknown key: %v", v, kerr.ErrorForCode(got.ErrorCode))
		}
		if got := alter(map[string]string{"retention.ms": "not a number"}); got.ErrorCode != kerr.InvalidConfig.Code {
			t.Fatalf("AlterConfigs v%d, bad value: %v", v, kerr.ErrorForCode(got.ErrorCode))
		}
		awaitConfigs(t, b, "ac", want)
	}
}

// awaitConfigs waits until the topic's overrides in the broker's metadata
// are exactly want.
func awaitConfigs(t *testing.T, b *testBroker, topic string, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !maps.Equal(b.metadata().Topics[topic].Configs, want) {
		if time.Now().After(deadline) {
			t.Fatalf("configs of %s: %v, want %v", topic, b.metadata().Topics[topic].Configs, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCreatePartitionsMutationQuota: partitions added count against
// controller.mutation.rate as created ones do (KIP-599): a client in debt
// gets THROTTLING_QUOTA_EXCEEDED with the time to wait (v3), and nothing
// is added.
func TestCreatePartitionsMutationQuota(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) {
		c.Limits.ControllerMutationRate = 2
		c.Limits.QuotaWindowNum = 2
	})
	ctx := testenv.Context(t, time.Minute)
	if err := b.CreateTopic(ctx, "qp", 1); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, b.Addr())
	grow := func(n int32) kmsg.CreatePartitionsResponse {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(3)
		req.TimeoutMillis = 30_000
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "qp", n
		req.Topics = append(req.Topics, rt)
		return *c.roundTrip(req).(*kmsg.CreatePartitionsResponse)
	}
	if r := grow(25); r.Topics[0].ErrorCode != 0 { // granted: the bucket was not in debt
		t.Fatalf("first growth: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	r := grow(26)
	if r.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || r.ThrottleMillis <= 0 {
		t.Fatalf("second growth: %v, throttle %d ms", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	if n := len(b.replication.Slots("qp")); n != 25 {
		t.Fatalf("%d partitions after the throttled request, want 25", n)
	}
}

// TestOpsAPIVersionsReassignments: AlterPartitionReassignments and
// ListPartitionReassignments v0 on one broker (a reassignment to the
// replica set it has completes at once; nothing is listed).
func TestOpsAPIVersionsReassignments(t *testing.T) {
	b := newTestBroker(t, nil)
	c := dialRaw(t, b.Addr())
	if err := b.CreateTopic(testenv.Context(t, time.Minute), "ra", 1); err != nil {
		t.Fatal(err)
	}
	spec := apiTable[int16(kmsg.AlterPartitionAssignments)]
	for v := spec.min; v <= spec.max; v++ {
		for _, tc := range []struct {
			replicas []int32
			want     int16
		}{{[]int32{b.cfg.BrokerID}, 0}, {nil, kerr.NoReassignmentInProgress.Code}, {[]int32{b.cfg.BrokerID, 99}, kerr.InvalidReplicaAssignment.Code}} {
			req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			req.SetVersion(v)
			req.TimeoutMillis = 30_000
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = "ra"
			rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			rp.Replicas = tc.replicas
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp := c.roundTrip(req).(*kmsg.AlterPartitionAssignmentsResponse)
			if got := resp.Topics[0].Partitions[0].ErrorCode; got != tc.want {
				t.Fatalf("AlterPartitionReassignments v%d to %v: %v, want %v", v, tc.replicas, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
			}
		}
	}
	spec = apiTable[int16(kmsg.ListPartitionReassignments)]
	for v := spec.min; v <= spec.max; v++ {
		req := kmsg.NewPtrListPartitionReassignmentsRequest()
		req.SetVersion(v)
		if resp := c.roundTrip(req).(*kmsg.ListPartitionReassignmentsResponse); resp.ErrorCode != 0 || len(resp.Topics) != 0 {
			t.Fatalf("ListPartitionReassignments v%d: %+v", v, resp)
		}
	}
}
