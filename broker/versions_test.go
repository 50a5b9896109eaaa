package broker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// Every advertised version of every API is exercised here over a raw
// connection, so that ApiVersions never promises an untested version.

func TestEveryAdvertisedVersion(t *testing.T) {
	b := newTestBroker(t, nil)
	c := dialRaw(t, b.Addr())
	spec := func(k kmsg.Key) apiSpec { return apiTable[int16(k)] }

	// CreateTopics, each version its own topic.
	for v := spec(kmsg.CreateTopics).min; v <= spec(kmsg.CreateTopics).max; v++ {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(v)
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("ct-v%d", v), 2, 1
		req.Topics = append(req.Topics, rt)
		resp := c.roundTrip(req).(*kmsg.CreateTopicsResponse)
		if resp.Topics[0].ErrorCode != 0 || len(b.replication.Slots(rt.Topic)) != 2 {
			t.Fatalf("CreateTopics v%d: %+v", v, resp.Topics[0])
		}
		again := c.roundTrip(req).(*kmsg.CreateTopicsResponse)
		if again.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
			t.Fatalf("CreateTopics v%d twice: error %d", v, again.Topics[0].ErrorCode)
		}
	}

	// Produce: each version appends one batch to "pv"; offsets follow on.
	if err := b.CreateTopic(testenv.Context(t, time.Minute), "pv", 1); err != nil {
		t.Fatal(err)
	}
	var batches [][]byte
	var next int64
	for v := spec(kmsg.Produce).min; v <= spec(kmsg.Produce).max; v++ {
		vals := []string{fmt.Sprint("a", v), fmt.Sprint("b", v), fmt.Sprint("c", v)}
		batch := makeBatch(1000*int64(v), -1, -1, -1, vals...)
		resp := c.roundTrip(produceRequest(v, -1, "pv", 0, bytes.Clone(batch))).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != next {
			t.Fatalf("Produce v%d: error %d base %d, want base %d", v, p.ErrorCode, p.BaseOffset, next)
		}
		binary.BigEndian.PutUint64(batch, uint64(next))
		// The leader stamps its leader epoch into the batch header: 0,
		// the partition's first election.
		binary.BigEndian.PutUint32(batch[batchLeaderEpochOffset:], 0)
		batches = append(batches, batch)
		next += int64(len(vals))
	}
	all := bytes.Join(batches, nil)

	// Fetch: every version returns exactly the stored bytes (sendfile path
	// with int32 prefixes below v12, uvarint prefixes at v12).
	for v := spec(kmsg.Fetch).min; v <= spec(kmsg.Fetch).max; v++ {
		resp := c.roundTrip(fetchRequest(v, "pv", 0, 0, 0, 1)).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.HighWatermark != next || !bytes.Equal(p.RecordBatches, all) {
			t.Fatalf("Fetch v%d: error %d hw %d, %d record bytes (want %d)", v, p.ErrorCode, p.HighWatermark, len(p.RecordBatches), len(all))
		}
		if v >= 5 && p.LogStartOffset != 0 {
			t.Fatalf("Fetch v%d: log start %d", v, p.LogStartOffset)
		}
		if v >= 11 && p.PreferredReadReplica != -1 {
			t.Fatalf("Fetch v%d: preferred read replica %d", v, p.PreferredReadReplica)
		}
		// From the middle: whole batches from the one holding the offset.
		mid := c.roundTrip(fetchRequest(v, "pv", 0, 4, 0, 1)).(*kmsg.FetchResponse)
		if got := mid.Topics[0].Partitions[0].RecordBatches; !bytes.Equal(got, bytes.Join(batches[1:], nil)) {
			t.Fatalf("Fetch v%d from offset 4: %d bytes", v, len(got))
		}
		atEnd := c.roundTrip(fetchRequest(v, "pv", 0, next, 0, 1)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if atEnd.ErrorCode != 0 || atEnd.RecordBatches == nil || len(atEnd.RecordBatches) != 0 {
			t.Fatalf("Fetch v%d at the end: error %d, records %v (want empty, not null)", v, atEnd.ErrorCode, atEnd.RecordBatches)
		}
		oor := c.roundTrip(fetchRequest(v, "pv", 0, next+1, 0, 1)).(*kmsg.FetchResponse)
		if oor.Topics[0].Partitions[0].ErrorCode != kerr.OffsetOutOfRange.Code {
			t.Fatalf("Fetch v%d past end: error %d", v, oor.Topics[0].Partitions[0].ErrorCode)
		}
	}

	// ListOffsets: earliest, latest, by timestamp (v0: see TestListOffsetsV0).
	for v := spec(kmsg.ListOffsets).min; v <= spec(kmsg.ListOffsets).max; v++ {
		for _, tc := range []struct{ ts, want int64 }{
			{-2, 0}, {-1, next}, {0, 0}, {4000, 3}, {4001, 3}, {5000, 6}, {99999, -1},
		} {
			req := kmsg.NewPtrListOffsetsRequest()
			req.SetVersion(v)
			req.ReplicaID = -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "pv"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = tc.ts
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			p := c.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
			if v == 0 {
				// A list of offsets (max_num_offsets defaults to 1): by
				// segment file time, and the one segment was written
				// now, after every record timestamp here.
				want := "[]"
				if tc.ts < 0 {
					want = fmt.Sprintf("[%d]", tc.want)
				}
				if p.ErrorCode != 0 || fmt.Sprint(p.OldStyleOffsets) != want {
					t.Fatalf("ListOffsets v0 ts %d: error %d offsets %v, want %s", tc.ts, p.ErrorCode, p.OldStyleOffsets, want)
				}
				continue
			}
			if p.ErrorCode != 0 || p.Offset != tc.want {
				t.Fatalf("ListOffsets v%d ts %d: error %d offset %d, want %d", v, tc.ts, p.ErrorCode, p.Offset, tc.want)
			}
		}
	}

	// Metadata: all topics, one topic, one unknown (auto-created).
	for v := spec(kmsg.Metadata).min; v <= spec(kmsg.Metadata).max; v++ {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		if v == 0 {
			req.Topics = []kmsg.MetadataRequestTopic{}
		}
		resp := c.roundTrip(req).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 1 || resp.Brokers[0].Host != "127.0.0.1" || fmt.Sprint(resp.Brokers[0].Port) != portOf(t, b.Addr()) {
			t.Fatalf("Metadata v%d brokers %+v", v, resp.Brokers)
		}
		if len(resp.Topics) != len(b.Topics()) {
			t.Fatalf("Metadata v%d: %d topics, want %d", v, len(resp.Topics), len(b.Topics()))
		}
		req = kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		req.AllowAutoTopicCreation = true
		for _, n := range []string{"pv", fmt.Sprint("auto-v", v)} {
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, mt)
		}
		resp = c.roundTrip(req).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != 0 || resp.Topics[1].ErrorCode != 0 ||
			len(resp.Topics[1].Partitions) != 1 || resp.Topics[1].Partitions[0].Leader != 0 {
			t.Fatalf("Metadata v%d named topics: %+v", v, resp.Topics)
		}
	}

	// InitProducerID: fresh ids every time; with a transactional id, one
	// producer id whose epoch each call bumps.
	seen := map[int64]bool{}
	txnPID, txnEpoch := int64(-1), int16(-1)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(3)
	fc.CoordinatorType, fc.CoordinatorKey = 1, "txn" // creates and loads __transaction_state
	if resp := c.roundTrip(fc).(*kmsg.FindCoordinatorResponse); resp.ErrorCode != 0 {
		t.Fatalf("FindCoordinator for transactional id txn: %+v", resp)
	}
	for v := spec(kmsg.InitProducerID).min; v <= spec(kmsg.InitProducerID).max; v++ {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(v)
		resp := c.roundTrip(req).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 || resp.ProducerEpoch != 0 || seen[resp.ProducerID] {
			t.Fatalf("InitProducerID v%d: %+v", v, resp)
		}
		seen[resp.ProducerID] = true
		req.TransactionalID = kmsg.StringPtr("txn")
		req.TransactionTimeoutMillis = 10000
		tresp := c.roundTrip(req).(*kmsg.InitProducerIDResponse)
		if tresp.ErrorCode != 0 || (txnPID >= 0 && tresp.ProducerID != txnPID) || tresp.ProducerEpoch != txnEpoch+1 || seen[tresp.ProducerID] {
			t.Fatalf("InitProducerID v%d with a transactional id: %+v (before: id %d epoch %d)", v, tresp, txnPID, txnEpoch)
		}
		txnPID, txnEpoch = tresp.ProducerID, tresp.ProducerEpoch
	}

	// DeleteTopics, each version deleting the topic CreateTopics made.
	for v := spec(kmsg.DeleteTopics).min; v <= spec(kmsg.DeleteTopics).max; v++ {
		name := fmt.Sprintf("ct-v%d", v)
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.SetVersion(v)
		if v >= 6 {
			dt := kmsg.NewDeleteTopicsRequestTopic()
			dt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, dt)
		} else {
			req.TopicNames = []string{name}
		}
		resp := c.roundTrip(req).(*kmsg.DeleteTopicsResponse)
		if resp.Topics[0].ErrorCode != 0 || b.replication.Slots(name) != nil {
			t.Fatalf("DeleteTopics v%d: error %d", v, resp.Topics[0].ErrorCode)
		}
		if got := c.roundTrip(req).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("DeleteTopics v%d twice: error %d", v, got)
		}
	}
}

func portOf(t testing.TB, addr string) string {
	t.Helper()
	i := bytes.LastIndexByte([]byte(addr), ':')
	return addr[i+1:]
}

// TestEveryAdvertisedEpochAndConfigVersion sends every advertised version
// of OffsetForLeaderEpoch and IncrementalAlterConfigs (DescribeConfigs:
// TestDescribeBrokerConfigs, over apiTable's range too).
func TestEveryAdvertisedEpochAndConfigVersion(t *testing.T) {
	b := newTestBroker(t, nil)
	c := dialRaw(t, b.Addr())
	spec := func(k kmsg.Key) apiSpec { return apiTable[int16(k)] }
	if err := b.CreateTopic(testenv.Context(t, time.Minute), "ep", 1); err != nil {
		t.Fatal(err)
	}
	resp := c.roundTrip(produceRequest(9, -1, "ep", 0, makeBatch(1000, -1, -1, -1, "a", "b", "c"))).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce: error %d", code)
	}

	// OffsetForLeaderEpoch: epoch 0 (the partition's only one) ends at the
	// log end; an unknown partition is UNKNOWN_TOPIC_OR_PARTITION; from v2
	// a current leader epoch newer than the leader's is UNKNOWN_LEADER_EPOCH.
	for v := spec(kmsg.OffsetForLeaderEpoch).min; v <= spec(kmsg.OffsetForLeaderEpoch).max; v++ {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.SetVersion(v)
		req.ReplicaID = -1
		for _, tp := range []struct {
			topic          string
			partition      int32
			current, epoch int32
		}{{"ep", 0, -1, 0}, {"ep", 1, -1, 0}, {"ep", 0, 1, 0}} {
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = tp.topic
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = tp.partition, tp.current, tp.epoch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		got := c.roundTrip(req).(*kmsg.OffsetForLeaderEpochResponse)
		if len(got.Topics) != 3 {
			t.Fatalf("OffsetForLeaderEpoch v%d: %d topics, want 3", v, len(got.Topics))
		}
		p := got.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.EndOffset != 3 || (v >= 1 && p.LeaderEpoch != 0) {
			t.Errorf("OffsetForLeaderEpoch v%d epoch 0: error %d end %d epoch %d, want end 3 epoch 0", v, p.ErrorCode, p.EndOffset, p.LeaderEpoch)
		}
		if p := got.Topics[1].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code || p.EndOffset != -1 {
			t.Errorf("OffsetForLeaderEpoch v%d unknown partition: error %d end %d", v, p.ErrorCode, p.EndOffset)
		}
		want := int16(0) // below v2 the current epoch is not sent
		if v >= 2 {
			want = kerr.UnknownLeaderEpoch.Code
		}
		if p := got.Topics[2].Partitions[0]; p.ErrorCode != want {
			t.Errorf("OffsetForLeaderEpoch v%d current epoch 1: error %d, want %d", v, p.ErrorCode, want)
		}
	}

	// IncrementalAlterConfigs: each version sets retention.ms on the topic
	// (validate-only first, which writes nothing), and is refused an
	// unknown key, a broker resource and an unknown topic.
	for v := spec(kmsg.IncrementalAlterConfigs).min; v <= spec(kmsg.IncrementalAlterConfigs).max; v++ {
		value := fmt.Sprint(3_600_000 + int(v))
		alter := func(validateOnly bool, typ kmsg.ConfigResourceType, name, key string) []kmsg.IncrementalAlterConfigsResponseResource {
			t.Helper()
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			req.SetVersion(v)
			req.ValidateOnly = validateOnly
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = typ, name
			op := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			op.Name, op.Op, op.Value = key, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
			rr.Configs = append(rr.Configs, op)
			req.Resources = append(req.Resources, rr)
			return c.roundTrip(req).(*kmsg.IncrementalAlterConfigsResponse).Resources
		}
		stored := func() string { return b.metadata().Topics["ep"].Configs["retention.ms"] }
		before := stored()
		if r := alter(true, kmsg.ConfigResourceTypeTopic, "ep", "retention.ms"); len(r) != 1 || r[0].ErrorCode != 0 {
			t.Fatalf("IncrementalAlterConfigs v%d validate-only: %+v", v, r)
		}
		if got := stored(); got != before {
			t.Fatalf("IncrementalAlterConfigs v%d validate-only wrote retention.ms=%s", v, got)
		}
		if r := alter(false, kmsg.ConfigResourceTypeTopic, "ep", "retention.ms"); len(r) != 1 || r[0].ErrorCode != 0 || r[0].ResourceName != "ep" {
			t.Fatalf("IncrementalAlterConfigs v%d: %+v", v, r)
		}
		testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("v%d: retention.ms=%s in the metadata", v, value), func() (bool, string) { return stored() == value, "retention.ms=" + stored() })
		for _, bad := range []struct {
			typ        kmsg.ConfigResourceType
			name, key  string
			want       *kerr.Error
			descriptor string
		}{
			{kmsg.ConfigResourceTypeTopic, "ep", "no.such.key", kerr.InvalidConfig, "unknown key"},
			{kmsg.ConfigResourceTypeBroker, "0", "broker.id", kerr.InvalidConfig, "read-only broker config"},
			{kmsg.ConfigResourceTypeTopic, "nope", "retention.ms", kerr.UnknownTopicOrPartition, "unknown topic"},
		} {
			r := alter(false, bad.typ, bad.name, bad.key)
			if len(r) != 1 || r[0].ErrorCode != bad.want.Code || r[0].ErrorMessage == nil {
				t.Errorf("IncrementalAlterConfigs v%d %s: %+v, want %v with a message", v, bad.descriptor, r, bad.want)
			}
		}
	}
}
