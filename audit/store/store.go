package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tributary/tributary/audit"
)

var (
	bucketMeta    = []byte("meta")
	bucketOffsets = []byte("offsets")
	bucketIDs     = []byte("ids")
	bucketWindows = []byte("windows")
	bucketCounts  = []byte("counts")
	bucketExpiry  = []byte("expiry")
	layoutVersion = []byte("1")
)

// Store is the audit service's persistent state.
type Store struct {
	db *bolt.DB
}

// Open opens (creating if needed) the store file at path.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMeta, bucketOffsets, bucketIDs, bucketWindows, bucketCounts, bucketExpiry} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch v := meta.Get([]byte("version")); {
		case v == nil:
			return meta.Put([]byte("version"), layoutVersion)
		case !bytes.Equal(v, layoutVersion):
			return fmt.Errorf("%w: %q", ErrVersion, v)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: init %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// Position is the next offset to consume of one audit-topic partition.
type Position struct {
	Cluster   string
	Partition int32
	Next      int64
}

// Result says what Apply did.
type Result struct {
	Applied, Duplicates int
}

// CheckNames reports whether e's names can be keyed.
func CheckNames(e audit.Event) error {
	if e.Topic == "" {
		return fmt.Errorf("%w: empty topic", ErrBadName)
	}
	for _, s := range []string{e.Topic, e.Tier, e.Cluster, e.Instance} {
		if strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("%w: %q contains a NUL byte", ErrBadName, s)
		}
	}
	return nil
}

// Apply adds the events not applied before and stores the positions, in
// one transaction. now stamps the windows touched (their last update).
func (s *Store) Apply(events []audit.Event, positions []Position, now time.Time) (Result, error) {
	var res Result
	for _, e := range events {
		if err := CheckNames(e); err != nil {
			return res, err
		}
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		res = Result{}
		ids, windows, counts, offsets := tx.Bucket(bucketIDs), tx.Bucket(bucketWindows), tx.Bucket(bucketCounts), tx.Bucket(bucketOffsets)
		expiry := tx.Bucket(bucketExpiry)
		for _, e := range events {
			id := []byte(e.ID)
			if ids.Get(id) != nil {
				res.Duplicates++
				continue
			}
			start := e.WindowStart.UnixMilli()
			if err := ids.Put(id, u64(uint64(start))); err != nil {
				return err
			}
			if err := expiry.Put(append(u64(uint64(start)), id...), nil); err != nil {
				return err
			}
			wk := windowKey(e.Topic, start, e.Window.Milliseconds())
			if err := windows.Put(wk, u64(uint64(now.UnixMilli()))); err != nil {
				return err
			}
			ck := countKey(wk, e.Tier, e.Cluster, e.Instance)
			var v [24]byte
			if old := counts.Get(ck); len(old) == 24 {
				copy(v[:], old)
			}
			add(v[0:8], e.Count)
			add(v[8:16], e.Bytes)
			add(v[16:24], e.Errors)
			if err := counts.Put(ck, v[:]); err != nil {
				return err
			}
			res.Applied++
		}
		for _, p := range positions {
			if err := offsets.Put(offsetKey(p.Cluster, p.Partition), u64(uint64(p.Next))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("store: apply: %w", err)
	}
	return res, nil
}

// Positions returns the stored next offsets of cluster's partitions.
func (s *Store) Positions(cluster string) (map[int32]int64, error) {
	out := map[int32]int64{}
	prefix := append([]byte(cluster), 0)
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketOffsets).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != len(prefix)+4 || len(v) != 8 {
				continue
			}
			out[int32(binary.BigEndian.Uint32(k[len(prefix):]))] = int64(binary.BigEndian.Uint64(v))
		}
		return nil
	})
	return out, err
}

// Topics lists the topics with counts, sorted.
func (s *Store) Topics() ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketWindows).Cursor()
		for k, _ := c.First(); k != nil; {
			i := bytes.IndexByte(k, 0)
			if i < 0 {
				k, _ = c.Next()
				continue
			}
			out = append(out, string(k[:i]))
			// Skip the rest of this topic: seek past topic 0x00 0xff...
			next := append(append([]byte{}, k[:i]...), 1)
			k, _ = c.Seek(next)
		}
		return nil
	})
	return out, err
}

// Row is the summed counts of one tier instance in one window.
type Row struct {
	Tier, Cluster, Instance string
	Count, Bytes, Errors    int64
}

// Window is what the store holds about one topic and window.
type Window struct {
	Topic      string
	Start      time.Time
	Length     time.Duration
	LastUpdate time.Time
	Rows       []Row // sorted by tier, cluster, instance
}

// Windows returns the windows of topic whose start lies in [from, to)
// (zero times mean unbounded), in start order.
func (s *Store) Windows(topic string, from, to time.Time) ([]Window, error) {
	var out []Window
	prefix := append([]byte(topic), 0)
	err := s.db.View(func(tx *bolt.Tx) error {
		wc := tx.Bucket(bucketWindows).Cursor()
		counts := tx.Bucket(bucketCounts)
		seek := prefix
		if !from.IsZero() && from.UnixMilli() > 0 {
			seek = append(append([]byte{}, prefix...), u64(uint64(from.UnixMilli()))...)
		}
		for k, v := wc.Seek(seek); k != nil && bytes.HasPrefix(k, prefix); k, v = wc.Next() {
			if len(k) != len(prefix)+16 || len(v) != 8 {
				continue
			}
			start := int64(binary.BigEndian.Uint64(k[len(prefix):]))
			if !to.IsZero() && start >= to.UnixMilli() {
				break
			}
			w := Window{
				Topic:      topic,
				Start:      time.UnixMilli(start).UTC(),
				Length:     time.Duration(binary.BigEndian.Uint64(k[len(prefix)+8:])) * time.Millisecond,
				LastUpdate: time.UnixMilli(int64(binary.BigEndian.Uint64(v))).UTC(),
			}
			w.Rows = readRows(counts, k)
			out = append(out, w)
		}
		return nil
	})
	return out, err
}

func readRows(counts *bolt.Bucket, wk []byte) []Row {
	var rows []Row
	prefix := append(append([]byte{}, wk...), 0)
	c := counts.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		parts := strings.SplitN(string(k[len(prefix):]), "\x00", 3)
		if len(parts) != 3 || len(v) != 24 {
			continue
		}
		rows = append(rows, Row{
			Tier: parts[0], Cluster: parts[1], Instance: parts[2],
			Count:  int64(binary.BigEndian.Uint64(v[0:8])),
			Bytes:  int64(binary.BigEndian.Uint64(v[8:16])),
			Errors: int64(binary.BigEndian.Uint64(v[16:24])),
		})
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Tier != b.Tier {
			return a.Tier < b.Tier
		}
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		return a.Instance < b.Instance
	})
	return rows
}

// Prune deletes every window starting before cutoff, with its counts and
// the IDs of its events, and returns how many windows it deleted. The
// caller must refuse events for windows before cutoff from then on: their
// IDs are forgotten, so a re-sent one would count again.
func (s *Store) Prune(cutoff time.Time) (int, error) {
	end := uint64(max(cutoff.UnixMilli(), 0))
	deleted := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		deleted = 0
		ids, expiry, windows, counts := tx.Bucket(bucketIDs), tx.Bucket(bucketExpiry), tx.Bucket(bucketWindows), tx.Bucket(bucketCounts)
		var doomed [][]byte
		c := expiry.Cursor()
		for k, _ := c.First(); k != nil && len(k) >= 8 && binary.BigEndian.Uint64(k) < end; k, _ = c.Next() {
			doomed = append(doomed, bytes.Clone(k))
		}
		for _, k := range doomed {
			if err := ids.Delete(k[8:]); err != nil {
				return err
			}
			if err := expiry.Delete(k); err != nil {
				return err
			}
		}
		var oldWindows [][]byte
		wc := windows.Cursor()
		for k, _ := wc.First(); k != nil; k, _ = wc.Next() {
			i := bytes.IndexByte(k, 0)
			if i >= 0 && len(k) == i+17 && binary.BigEndian.Uint64(k[i+1:]) < end {
				oldWindows = append(oldWindows, bytes.Clone(k))
			}
		}
		for _, wk := range oldWindows {
			prefix := append(bytes.Clone(wk), 0)
			var keys [][]byte
			cc := counts.Cursor()
			for k, _ := cc.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cc.Next() {
				keys = append(keys, bytes.Clone(k))
			}
			for _, k := range keys {
				if err := counts.Delete(k); err != nil {
					return err
				}
			}
			if err := windows.Delete(wk); err != nil {
				return err
			}
			deleted++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: prune: %w", err)
	}
	return deleted, nil
}

// EventCount returns how many distinct event IDs were applied.
func (s *Store) EventCount() (int, error) {
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketIDs).Stats().KeyN
		return nil
	})
	return n, err
}

func windowKey(topic string, startMs, lengthMs int64) []byte {
	k := make([]byte, 0, len(topic)+17)
	k = append(k, topic...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(startMs))
	return binary.BigEndian.AppendUint64(k, uint64(lengthMs))
}

func countKey(wk []byte, tier, cluster, instance string) []byte {
	k := make([]byte, 0, len(wk)+len(tier)+len(cluster)+len(instance)+3)
	k = append(k, wk...)
	k = append(k, 0)
	k = append(k, tier...)
	k = append(k, 0)
	k = append(k, cluster...)
	k = append(k, 0)
	return append(k, instance...)
}

func offsetKey(cluster string, p int32) []byte {
	k := append([]byte(cluster), 0)
	return binary.BigEndian.AppendUint32(k, uint32(p))
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func add(b []byte, d int64) {
	binary.BigEndian.PutUint64(b, uint64(int64(binary.BigEndian.Uint64(b))+d))
}
