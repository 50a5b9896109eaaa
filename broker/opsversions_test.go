package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOpsAPIVersions sends every advertised version of the operations
// APIs (issue 29) over a raw connection to one broker.
func TestOpsAPIVersions(t *testing.T) {
	b := newTestBroker(t, nil)
	c := dialRaw(t, b.Addr())
	ctx := testContext(t, time.Minute)
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
			if len(b.lookup("cp").partitions) != int(count) {
				t.Fatalf("CreatePartitions v%d to %d: error %d, %d partitions served", v, n, got, len(b.lookup("cp").partitions))
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
	if err := b.CreateTopic(testContext(t, time.Minute), "el", 2); err != nil {
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
	if err := b.CreateTopic(testContext(t, time.Minute), "dr", 1); err != nil {
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
		if start := b.lookup("dr").partitions[0].log.StartOffset(); start != int64(v)+1 {
			t.Fatalf("after DeleteRecords v%d: log start %d", v, start)
		}
	}
}
