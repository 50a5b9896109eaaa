package clustertest

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partlog"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestReplicatedCompaction: a compacted topic with 3 replicas. Leader and
// followers clean their logs independently; a follower down while the
// leader cleaned what it missed catches up from the leader's compacted log
// (fetching across the gaps the cleaner left), and all three replicas then
// hold the same key → value state, that of a model of what was produced.
func TestReplicatedCompaction(t *testing.T) {
	c := newMemClusterWith(t, 3, func(cfg *config.Config) {
		cfg.Replication.LagTimeMax = 2 * time.Second
		cfg.Cleaner.Backoff = 50 * time.Millisecond
	})
	ctx := testenv.Context(t, 3*time.Minute)
	addrs := bootstrap(c, 3)
	for _, a := range addrs {
		testenv.WaitFor(t, waitTimeout, "broker "+a+" to see 3 brokers", func() (bool, string) {
			return len(metadata(t, ctx, a).Brokers) == 3, ""
		})
	}
	const topic = "compacted-rf3"
	td := createReplicated(t, ctx, addrs, topic, 1, 3, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("8192"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"), "delete.retention.ms": kadm.StringPtr("0"),
	})
	leader := td.Partitions[0].Leader
	var follower int32 // the one that will miss a cleaning
	for _, r := range td.Partitions[0].Replicas {
		if r != leader {
			follower = r
		}
	}
	model := map[string]string{}
	cl := newClient(t, addrs, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	// Batches of 10 records over 60 keys: later rounds make whole earlier
	// batches obsolete, so the cleaner leaves gaps between batches.
	write := func(round, batches int) int64 {
		var last int64
		for b := 0; b < batches; b++ {
			var rs []*kgo.Record
			for j := 0; j < 10; j++ {
				k := fmt.Sprintf("key-%d", (b*10+j)%60)
				v := fmt.Sprintf("r%d-b%d-%d", round, b, j)
				var val []byte
				if (b+j+round)%17 != 0 {
					val = []byte(v)
					model[k] = v
				} else {
					delete(model, k) // a tombstone
				}
				rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(k), Value: val})
			}
			res := cl.ProduceSync(ctx, rs...)
			if err := res.FirstErr(); err != nil {
				t.Fatalf("produce round %d: %v", round, err)
			}
			last = res[len(res)-1].Record.Offset
		}
		return last + 1
	}
	partDir := func(id int32) string { return filepath.Join(c.Dir(id), topic+"-0") }
	awaitCleaned := func(id int32, past int64) {
		t.Helper()
		testenv.WaitFor(t, waitTimeout, fmt.Sprintf("broker %d's cleaner past offset %d", id, past), func() (bool, string) {
			got := cleanerCheckpoint(partDir(id))
			return got > past, fmt.Sprintf("checkpoint %d", got)
		})
	}

	end1 := write(1, 60)
	for _, id := range []int32{1, 2, 3} {
		awaitCleaned(id, 0) // every replica cleans its own log
	}

	// The follower goes; the leader takes more updates and cleans them.
	c.Stop(t, follower)
	end2 := write(2, 60)
	write(3, 30) // rolls the round-2 segments away from the active one
	awaitCleaned(leader, end2-100)

	c.Restart(t, follower)
	end4 := write(4, 3)
	testenv.WaitFor(t, waitTimeout, "the follower back in the ISR", func() (bool, string) {
		d := metadata(t, ctx, addrs[0], topic).Topics[topic].Partitions[0]
		return len(d.ISR) == 3, fmt.Sprint("ISR ", d.ISR)
	})
	// All replicas at the end, then stopped: their logs are read from disk.
	for _, id := range []int32{1, 2, 3} {
		if id != leader {
			c.Stop(t, id)
		}
	}
	c.Stop(t, leader)
	states := map[int32]map[string]string{}
	for _, id := range []int32{1, 2, 3} {
		state, end, offsets := readReplica(t, partDir(id))
		if end != end4 {
			t.Errorf("broker %d: log end %d, want %d", id, end, end4)
		}
		if id == leader && offsets[end1] {
			t.Errorf("the leader kept offset %d: the follower did not fetch across a gap", end1)
		}
		states[id] = state
	}
	for id, st := range states {
		if fmt.Sprint(st) != fmt.Sprint(model) {
			t.Errorf("broker %d holds %d keys %v, the model %d keys %v", id, len(st), st, len(model), model)
		}
	}
}

// cleanerCheckpoint reads a partition's cleaner checkpoint (offset int64 |
// crc32c, broker/partlog's format); 0 when there is none yet.
func cleanerCheckpoint(dir string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, "cleaner-checkpoint"))
	if err != nil || len(b) != 12 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// readReplica opens a stopped broker's partition directory and returns the
// key → value state its records give (a tombstone deletes), its end offset
// and the offsets it holds.
func readReplica(t *testing.T, dir string) (map[string]string, int64, map[int64]bool) {
	t.Helper()
	l, err := partlog.Open(dir, partlog.Config{})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	defer l.Close()
	dec := kgo.DefaultDecompressor()
	state, offsets := map[string]string{}, map[int64]bool{}
	next := l.StartOffset()
	for next < l.EndOffset() {
		v, err := l.Read(next, 1<<20)
		if err != nil {
			t.Fatalf("read %s at %d: %v", dir, next, err)
		}
		b, err := v.Bytes()
		v.Release()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			break // the end lies in a gap
		}
		for len(b) > 0 {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b); err != nil {
				t.Fatalf("%s: batch at %d: %v", dir, next, err)
			}
			b = b[12+int(rb.Length):]
			raw, err := dec.Decompress(rb.Records, kgo.CompressionCodecType(rb.Attributes&7))
			if err != nil {
				t.Fatal(err)
			}
			for i := int32(0); i < rb.NumRecords; i++ {
				var r kmsg.Record
				n, _ := binary.Varint(raw)
				_, hdr := binary.Varint(raw)
				if err := r.ReadFrom(raw[:hdr+int(n)]); err != nil {
					t.Fatalf("%s: record in batch %d: %v", dir, rb.FirstOffset, err)
				}
				raw = raw[hdr+int(n):]
				off := rb.FirstOffset + int64(r.OffsetDelta)
				if off < next || rb.Attributes&0x20 != 0 {
					continue
				}
				offsets[off] = true
				if r.Value == nil {
					delete(state, string(r.Key))
				} else {
					state[string(r.Key)] = string(r.Value)
				}
			}
			next = max(next, rb.FirstOffset+int64(rb.LastOffsetDelta)+1)
		}
	}
	return state, l.EndOffset(), offsets
}
