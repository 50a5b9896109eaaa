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
