package broker

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/broker/partlog"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// healthy asserts that c still gets ApiVersions answered.
func healthy(t *testing.T, c *rawConn) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) != len(apiTable) {
		t.Fatalf("ApiVersions: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
}

func TestBadFramesCloseOnlyTheirConnection(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) { c.SocketRequestMaxBytes = 1 << 16 })
	bystander := dialRaw(t, b.Addr())
	healthy(t, bystander)

	header := func(key, version int16) []byte {
		h := kbin.AppendInt16(nil, key)
		h = kbin.AppendInt16(h, version)
		h = kbin.AppendInt32(h, 7)
		return kbin.AppendNullableString(h, nil)
	}
	frame := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	// A well-formed request of an API Kafka has and this broker does not
	// implement: refused like an unknown key (the connection is closed, as
	// Kafka closes it on an API key it does not know).
	unimplemented := kmsg.NewPtrDescribeDelegationTokenRequest()
	unimplemented.SetVersion(1)
	if _, ok := apiTable[unimplemented.Key()]; ok {
		t.Fatal("DescribeDelegationToken is implemented now: pick another unimplemented API for this case")
	}
	var f kmsg.RequestFormatter
	cases := []struct {
		name   string
		data   []byte
		reason string // tributary_broker_bad_requests_total's label
	}{
		{"oversized", binary.BigEndian.AppendUint32(nil, 1<<16+1), "too_large"},
		{"negative size", binary.BigEndian.AppendUint32(nil, 0x80000000), "too_large"},
		{"short header", frame([]byte{0, 3, 0}), "malformed"},
		{"unknown api key", frame(header(999, 0)), "unsupported"},
		{"unimplemented api (DescribeDelegationToken v1)", f.AppendRequest(nil, unimplemented, 7), "unsupported"},
		{"version too old", frame(header(int16(kmsg.Produce), 2)), "unsupported"},
		{"implemented api, no body (JoinGroup v5)", frame(header(int16(kmsg.JoinGroup), 5)), "malformed"},
		{"truncated body", frame(append(header(int16(kmsg.Metadata), 1), 0, 0, 0, 9, 0, 3, 'a')), "malformed"},
		{"garbage", frame([]byte("this is not a kafka request at all")), "malformed"}, // its client id overruns the frame
	}
	bad := func(reason string) float64 {
		return counterValue(t, b.reg, "tributary_broker_bad_requests_total", map[string]string{"reason": reason})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := bad(tc.reason)
			c := dialRaw(t, b.Addr())
			c.writeRaw(tc.data)
			c.expectClosed()
			healthy(t, bystander)
			healthy(t, dialRaw(t, b.Addr()))
			if got := bad(tc.reason) - before; got != 1 {
				t.Errorf("bad_requests_total{reason=%q} rose by %v, want 1", tc.reason, got)
			}
		})
	}
}

func TestApiVersionsUnsupportedVersionAnsweredInV0(t *testing.T) {
	b := newTestBroker(t, nil)
	c := dialRaw(t, b.Addr())
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(4) // newer than we speak
	corr := c.send(req)
	body, err := c.readFrame(5e9)
	if err != nil {
		t.Fatal(err)
	}
	v0 := kmsg.NewPtrApiVersionsRequest()
	v0.SetVersion(0)
	resp := decodeResponse(t, v0, corr, body).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error %d, want UNSUPPORTED_VERSION", resp.ErrorCode)
	}
	if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MaxVersion != 3 {
		t.Fatalf("api keys %+v, want ApiVersions 0-3 only", resp.ApiKeys)
	}
	healthy(t, c) // the connection stays usable
}

func TestCorruptCRCRejectedAndNothingWritten(t *testing.T) {
	b := newTestBroker(t, nil)
	if err := b.CreateTopic(testenv.Context(t, time.Minute), "crc", 1); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, b.Addr())
	good := makeBatch(1000, -1, -1, -1, "one", "two")
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 0xff // a flipped payload byte: CRC no longer matches

	for _, v := range []int16{3, 9} {
		resp := c.roundTrip(produceRequest(v, 1, "crc", 0, bad)).(*kmsg.ProduceResponse)
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.CorruptMessage.Code {
			t.Fatalf("v%d: error %v, want CORRUPT_MESSAGE", v, kerr.ErrorForCode(got))
		}
	}
	// A good batch and a bad one in the same partition: nothing is written.
	resp := c.roundTrip(produceRequest(9, 1, "crc", 0, append(append([]byte(nil), good...), bad...))).(*kmsg.ProduceResponse)
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.CorruptMessage.Code {
		t.Fatalf("mixed: error %v, want CORRUPT_MESSAGE", kerr.ErrorForCode(got))
	}
	if end := b.partitions.Leader("crc", 0).Log().EndOffset(); end != 0 {
		t.Fatalf("log end offset %d after corrupt batches, want 0", end)
	}
	// Same connection still served; a good batch lands at offset 0.
	resp = c.roundTrip(produceRequest(9, 1, "crc", 0, good)).(*kmsg.ProduceResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("good batch: error %v, base %d", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
}

func TestProduceErrors(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) {
		c.DisableAutoCreateTopics = true
		c.MessageMaxBytes = 1000
	})
	if err := b.CreateTopic(testenv.Context(t, time.Minute), "t", 2); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, b.Addr())
	code := func(req *kmsg.ProduceRequest) int16 {
		t.Helper()
		return c.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	big := make([]byte, 2000)
	for i := range big {
		big[i] = byte(i * 7)
	}
	cases := []struct {
		name string
		req  *kmsg.ProduceRequest
		want *kerr.Error
	}{
		{"unknown topic", produceRequest(7, 1, "nope", 0, makeBatch(1, -1, -1, -1, "x")), kerr.UnknownTopicOrPartition},
		{"unknown partition", produceRequest(7, 1, "t", 2, makeBatch(1, -1, -1, -1, "x")), kerr.UnknownTopicOrPartition},
		{"too large", produceRequest(7, 1, "t", 0, makeBatch(1, -1, -1, -1, string(big))), kerr.MessageTooLarge},
		{"bad acks", produceRequest(7, 2, "t", 0, makeBatch(1, -1, -1, -1, "x")), kerr.InvalidRequiredAcks},
		{"truncated batch", produceRequest(7, 1, "t", 0, makeBatch(1, -1, -1, -1, "x")[:40]), kerr.CorruptMessage},
		{"empty records", produceRequest(7, 1, "t", 0, nil), kerr.CorruptMessage},
	}
	for _, tc := range cases {
		if got := code(tc.req); got != tc.want.Code {
			t.Errorf("%s: error %v, want %v", tc.name, kerr.ErrorForCode(got), tc.want)
		}
	}
	if end := b.partitions.Leader("t", 0).Log().EndOffset(); end != 0 {
		t.Fatalf("log end offset %d, want 0: a rejected batch was written", end)
	}
	// Metadata with auto-create off does not create the topic.
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	md.AllowAutoTopicCreation = true
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("nope")
	md.Topics = append(md.Topics, mt)
	resp := c.roundTrip(md).(*kmsg.MetadataResponse)
	if resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || b.replication.Slots("nope") != nil {
		t.Fatalf("metadata for unknown topic: error %d, created %v", resp.Topics[0].ErrorCode, b.replication.Slots("nope") != nil)
	}
}

func TestStorageErrorTable(t *testing.T) {
	cases := map[error]*kerr.Error{
		partlog.ErrCorruptBatch:         kerr.CorruptMessage,
		partlog.ErrOffsetOutOfRange:     kerr.OffsetOutOfRange,
		partlog.ErrOutOfOrderSequence:   kerr.OutOfOrderSequenceNumber,
		partlog.ErrInvalidProducerEpoch: kerr.InvalidProducerEpoch,
		partlog.ErrCorruption:           kerr.KafkaStorageError,
		partlog.ErrClosed:               kerr.NotLeaderForPartition,
	}
	for err, want := range cases {
		if got := partition.ErrorCode(err); got != want.Code {
			t.Errorf("%v -> %v, want %v", err, kerr.ErrorForCode(got), want)
		}
	}
	// Through Produce, with an injected failure in an in-memory log.
	b := newTestBroker(t, nil, withMemLogs())
	if err := b.CreateTopic(testenv.Context(t, time.Minute), "mem", 1); err != nil {
		t.Fatal(err)
	}
	b.partitions.Leader("mem", 0).Log().(*memLog).failNext = partlog.ErrCorruption
	c := dialRaw(t, b.Addr())
	resp := c.roundTrip(produceRequest(9, -1, "mem", 0, makeBatch(1, -1, -1, -1, "x"))).(*kmsg.ProduceResponse)
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.KafkaStorageError.Code {
		t.Fatalf("injected corruption: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(got))
	}
}
