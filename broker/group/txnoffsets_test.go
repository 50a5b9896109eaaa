package group

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memTxnLog is a memLog that takes transactional batches and markers the
// way the broker's offsets partitions report them on replay.
type memTxnLog struct{ memLog }

func (l *memTxnLog) AppendTxn(rs []Record, pid int64, _ int16) error {
	tagged := make([]Record, len(rs))
	for i, r := range rs {
		r.ProducerID, r.Transactional = pid, true
		tagged[i] = r
	}
	return l.Append(tagged)
}

func (l *memTxnLog) marker(pid int64, commit bool) {
	_ = l.Append([]Record{{ProducerID: pid, Control: true, Commit: commit}})
}

func txnCommit(t *testing.T, c *Coordinator, version int16, group string, pid int64, member string, gen int32, topic string, p int32, offset int64) int16 {
	t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.SetVersion(version)
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", group, pid, 0
	req.MemberID, req.Generation = member, gen
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = p, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := c.TxnOffsetCommit(context.Background(), req)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// fetchStable fetches one offset requiring stable offsets (KIP-447).
func fetchStable(t *testing.T, c *Coordinator, group, topic string, p int32) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(7)
	req.Group, req.RequireStable = group, true
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	req.Topics = append(req.Topics, rt)
	resp := c.OffsetFetch(context.Background(), req)
	op := resp.Topics[0].Partitions[0]
	return op.Offset, op.ErrorCode
}

// TestTxnOffsetsPendingUntilMarker: transactional offsets are invisible
// until their COMMIT marker, gone after ABORT, and a stable fetch meanwhile
// gets UNSTABLE_OFFSET_COMMIT; a reload of the log reaches the same state,
// keeping an open transaction pending.
func TestTxnOffsetsPendingUntilMarker(t *testing.T) {
	log := &memTxnLog{}
	c := newTestCoordinator(t, Config{})
	loaded(t, c, log)
	if code := txnCommit(t, c, 3, "g", 7, "", -1, "in", 0, 10); code != 0 {
		t.Fatalf("TxnOffsetCommit: %d", code)
	}
	if o, _ := fetchOffset(t, c, "g", "in", 0); o != -1 {
		t.Fatalf("pending offset visible: %d", o)
	}
	if _, code := fetchStable(t, c, "g", "in", 0); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("stable fetch with a pending offset: code %d", code)
	}
	log.marker(7, true)
	c.TxnMarker(0, 7, 0, true)
	if o, code := fetchStable(t, c, "g", "in", 0); o != 10 || code != 0 {
		t.Fatalf("after commit: %d code %d", o, code)
	}
	// Aborted: the offset stays 10.
	if code := txnCommit(t, c, 3, "g", 8, "", -1, "in", 0, 20); code != 0 {
		t.Fatalf("TxnOffsetCommit: %d", code)
	}
	log.marker(8, false)
	c.TxnMarker(0, 8, 0, false)
	if o, code := fetchStable(t, c, "g", "in", 0); o != 10 || code != 0 {
		t.Fatalf("after abort: %d code %d", o, code)
	}
	// Left open: pending across a reload.
	if code := txnCommit(t, c, 3, "g", 9, "", -1, "in", 0, 30); code != 0 {
		t.Fatalf("TxnOffsetCommit: %d", code)
	}
	c.Unload(0)
	c2 := newTestCoordinator(t, Config{})
	loaded(t, c2, log)
	if o, code := fetchStable(t, c2, "g", "in", 0); o != -1 || code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("reloaded with an open transaction: %d code %d", o, code)
	}
	if o, _ := fetchOffset(t, c2, "g", "in", 0); o != 10 {
		t.Fatalf("reloaded committed offset %d, want 10 (the aborted 20 must not appear)", o)
	}
	log.marker(9, true)
	c2.TxnMarker(0, 9, 0, true)
	if o, code := fetchStable(t, c2, "g", "in", 0); o != 30 || code != 0 {
		t.Fatalf("after the reloaded transaction committed: %d code %d", o, code)
	}
	c3 := newTestCoordinator(t, Config{})
	loaded(t, c3, log)
	if o, code := fetchStable(t, c3, "g", "in", 0); o != 30 || code != 0 {
		t.Fatalf("second reload: %d code %d", o, code)
	}
}

// TestTxnOffsetCommitChecksMember: KIP-447 generation checks.
func TestTxnOffsetCommitChecksMember(t *testing.T) {
	log := &memTxnLog{}
	c := newTestCoordinator(t, Config{})
	loaded(t, c, log)
	if code := txnCommit(t, c, 3, "g", 7, "nobody", 1, "in", 0, 10); code != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: code %d", code)
	}
	if len(log.records) != 0 {
		t.Fatalf("a refused commit wrote %d records", len(log.records))
	}
	if code := txnCommit(t, c, 3, "", 7, "", -1, "in", 0, 10); code != kerr.InvalidGroupID.Code {
		t.Fatalf("empty group: code %d", code)
	}
	// A plain log cannot take transactional batches.
	c2 := newTestCoordinator(t, Config{})
	loaded(t, c2, &memLog{})
	if code := txnCommit(t, c2, 3, "g", 7, "", -1, "in", 0, 10); code != kerr.UnsupportedForMessageFormat.Code {
		t.Fatalf("plain log: code %d", code)
	}
}

// TestTxnOffsetsLaterPlainCommitWins: a plain OffsetCommit appended after
// a transaction's offset for the same partition stays the committed one
// when that transaction commits (Kafka keeps the record appended later);
// the transaction's offset still wins over a plain one appended before it.
// A reload of the log reaches the same offsets.
func TestTxnOffsetsLaterPlainCommitWins(t *testing.T) {
	log := &memTxnLog{}
	c := newTestCoordinator(t, Config{})
	loaded(t, c, log)
	mustCode := func(what string, code int16) {
		t.Helper()
		if code != 0 {
			t.Fatalf("%s: code %d", what, code)
		}
	}
	// Partition 0: plain 5, transactional 10, plain 20: 20 wins.
	// Partition 1: plain 5, transactional 10: 10 wins.
	mustCode("plain commit", simpleCommit(t, c, "g", "in", 0, 5, ""))
	mustCode("plain commit", simpleCommit(t, c, "g", "in", 1, 5, ""))
	mustCode("txn commit", txnCommit(t, c, 3, "g", 7, "", -1, "in", 0, 10))
	mustCode("txn commit", txnCommit(t, c, 3, "g", 7, "", -1, "in", 1, 10))
	mustCode("plain commit", simpleCommit(t, c, "g", "in", 0, 20, "later"))
	log.marker(7, true)
	c.TxnMarker(0, 7, 0, true)
	check := func(c *Coordinator, when string) {
		t.Helper()
		if o, meta := fetchOffset(t, c, "g", "in", 0); o != 20 || meta != "later" {
			t.Fatalf("%s: partition 0 at %d (%q), want the later plain commit 20", when, o, meta)
		}
		if o, _ := fetchOffset(t, c, "g", "in", 1); o != 10 {
			t.Fatalf("%s: partition 1 at %d, want the transaction's 10", when, o)
		}
	}
	check(c, "after the marker")
	c.Unload(0)
	c2 := newTestCoordinator(t, Config{})
	loaded(t, c2, log)
	check(c2, "after a reload")
}

// TestDeleteGroupsDropsPendingTxnOffsets: DeleteGroups of an empty group
// with an open transaction's offsets writes tombstones for them too (as
// Kafka's coordinator does) and the transaction's COMMIT marker brings
// none back, here or after a reload; the transaction's later commits to
// the group (recreated) count.
func TestDeleteGroupsDropsPendingTxnOffsets(t *testing.T) {
	log := &memTxnLog{}
	c := newTestCoordinator(t, Config{})
	loaded(t, c, log)
	if code := simpleCommit(t, c, "g", "in", 1, 3, ""); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	if code := txnCommit(t, c, 3, "g", 7, "", -1, "in", 0, 10); code != 0 {
		t.Fatalf("TxnOffsetCommit: %d", code)
	}
	if code := txnCommit(t, c, 3, "g", 7, "", -1, "in", 1, 11); code != 0 {
		t.Fatalf("TxnOffsetCommit: %d", code)
	}
	before := len(log.records)
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.SetVersion(2)
	req.Groups = []string{"g"}
	if code := c.DeleteGroups(context.Background(), req).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("DeleteGroups: code %d", code)
	}
	var tombstoned []TopicPartition
	for _, r := range log.records[before:] {
		d, err := decodeRecord(r)
		if err != nil || !d.isOffset || d.value != nil || r.Transactional {
			t.Fatalf("DeleteGroups wrote %+v (%v), want plain offset tombstones", d, err)
		}
		tombstoned = append(tombstoned, TopicPartition{d.topic, d.partition})
	}
	if want := []TopicPartition{{"in", 1}, {"in", 0}}; len(tombstoned) != 2 || tombstoned[0] != want[0] || tombstoned[1] != want[1] {
		t.Fatalf("tombstones %v, want %v (committed first, then the pending-only one)", tombstoned, want)
	}
	if _, code := fetchStable(t, c, "g", "in", 0); code != 0 {
		t.Fatalf("stable fetch after the delete: code %d (the pending offset should be gone)", code)
	}
	// The open transaction commits again to the group (recreated), then
	// commits: only that later offset counts.
	if code := txnCommit(t, c, 3, "g", 7, "", -1, "in", 2, 12); code != 0 {
		t.Fatalf("TxnOffsetCommit after the delete: %d", code)
	}
	log.marker(7, true)
	c.TxnMarker(0, 7, 0, true)
	check := func(c *Coordinator, when string) {
		t.Helper()
		for p, want := range []int64{-1, -1, 12} {
			if o, code := fetchStable(t, c, "g", "in", int32(p)); o != want || code != 0 {
				t.Fatalf("%s: partition %d at %d (code %d), want %d", when, p, o, code, want)
			}
		}
	}
	check(c, "after the marker")
	c.Unload(0)
	c2 := newTestCoordinator(t, Config{})
	loaded(t, c2, log)
	check(c2, "after a reload")
}
