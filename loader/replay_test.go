package loader_test

import (
	"context"
	"encoding/json"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/loader"
	"github.com/tributary/tributary/mirror/origin"
	"github.com/tributary/tributary/schema"
)

// mirrored returns the records of d with ids in [from, to) as the mirror
// delivers them: with the origin header of their source partition and
// offset (source offset = id / partitions, as if produced in id order).
func (c *cluster) mirrored(t *testing.T, d dataset, from, to int) []*kgo.Record {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		v, err := c.ser.Encode(context.Background(), d.topic+"-value", schemaV1, map[string]any{"id": int64(i), "page": page(i)})
		if err != nil {
			t.Fatal(err)
		}
		p := int32(i) % d.partitions
		recs = append(recs, &kgo.Record{Topic: d.topic, Partition: p, Value: v, Timestamp: d.ts(i),
			Headers: []kgo.RecordHeader{{Key: origin.Header, Value: origin.Append(nil, "dc1", p, int64(i/int(d.partitions)))}}})
	}
	return recs
}

// TestMirrorReplay delivers source offsets twice, as a restarted mirror
// does (within one load and across loads): each record lands once.
func TestMirrorReplay(t *testing.T) {
	c := newCluster(t)
	d := dataset{topic: "mirrored", n: 2000, partitions: 2, start: hourStart(), span: time.Hour}
	c.CreateTopic(t, d.topic, d.partitions)
	for _, fc := range fileSystems {
		t.Run(fc.name, func(t *testing.T) {
			fsys, base, uri := fc.open(t)
			cfg := baseConfig(c, "replay-"+fc.name, d.topic, uri)
			cfg.CommitRecords = 300
			if fc.name == "local" {
				c.produce(t, c.mirrored(t, d, 0, 1200))
				c.produce(t, c.mirrored(t, d, 800, 1400)) // replay inside the next load
			}
			runChild(t, cfg)
			if fc.name == "local" {
				c.produce(t, c.mirrored(t, d, 1000, 2000)) // replay across loads
			}
			sum := runChild(t, cfg)
			got := readAll(t, fsys, base)
			for i := 0; i < d.n; i++ {
				if len(got[int64(i)]) != 1 {
					t.Fatalf("record %d landed %d times", i, len(got[int64(i)]))
				}
			}
			if len(got) != d.n {
				t.Fatalf("%d records landed, want %d", len(got), d.n)
			}
			if fc.name == "local" && sum.Duplicates != 400 {
				t.Errorf("second run dropped %d duplicates, want 400", sum.Duplicates)
			}
		})
	}
}

// TestBadRecords produces one record of each bad kind among good ones:
// each lands in _errors with its topic, partition, offset and reason, the
// good ones land, and the run succeeds.
func TestBadRecords(t *testing.T) {
	c := newCluster(t)
	const topic = "mixed"
	c.CreateTopic(t, topic, 1)
	good, err := c.ser.Encode(context.Background(), topic+"-value", schemaV1, map[string]any{"id": int64(7), "page": "/p"})
	if err != nil {
		t.Fatal(err)
	}
	id, _, _ := schema.Parse(good)
	unknown, _ := schema.Frame(9999, []byte{2, 2, 'x'})
	garbage, _ := schema.Frame(id, []byte{0xff, 0xff, 0xff})
	ts := hourStart()
	c.produce(t, []*kgo.Record{
		{Topic: topic, Value: good, Timestamp: ts},
		{Topic: topic, Value: []byte("plain text, not Avro"), Timestamp: ts},
		{Topic: topic, Value: unknown, Timestamp: ts},
		{Topic: topic, Value: garbage, Timestamp: ts},
		{Topic: topic, Value: good, Timestamp: ts},
	})
	wantReasons := map[int64]string{1: "not framed Avro", 2: "unknown schema id 9999", 3: "does not decode with schema"}
	for _, fc := range fileSystems {
		t.Run(fc.name, func(t *testing.T) {
			fsys, base, uri := fc.open(t)
			sum := runChild(t, baseConfig(c, "bad-"+fc.name, topic, uri))
			if sum.Records != 2 || sum.Errors != 3 {
				t.Fatalf("summary %+v, want 2 records and 3 errors", sum)
			}
			dir := path.Join(base, loader.ErrorsDir, topic)
			list, err := fsys.ReadDir(dir)
			if err != nil || len(list) != 1 || list[0].Name() != "mixed+0+1+3.jsonl" {
				t.Fatalf("errors dir %s: %v %v", dir, list, err)
			}
			b, err := filesys.ReadFile(fsys, path.Join(dir, list[0].Name()))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) != 3 {
				t.Fatalf("%d error lines:\n%s", len(lines), b)
			}
			for _, line := range lines {
				var e struct {
					Topic     string
					Partition int32
					Offset    int64
					Reason    string
					Value     []byte
				}
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatal(err)
				}
				if e.Topic != topic || e.Partition != 0 || !strings.Contains(e.Reason, wantReasons[e.Offset]) {
					t.Errorf("error record %+v, want reason %q", e, wantReasons[e.Offset])
				}
			}
			got := readAll(t, fsys, base)
			if len(got) != 1 || len(got[7]) != 2 {
				t.Errorf("good records: %v", got)
			}
		})
	}
}

// TestMirrorRefusedRecordRetried delivers one source partition as the
// mirror does when the target refuses a record (mirror.halt): the records
// after the refused one land first, and the mirror's retry from its last
// commit sends the refused record (for the first time) after them,
// followed by copies of the others. The refused record must land, once;
// the first time inside one load (across commits), the second across
// loads (the gap carried in the manifest).
func TestMirrorRefusedRecordRetried(t *testing.T) {
	c := newCluster(t)
	d := dataset{topic: "refused", n: 30, partitions: 1, start: hourStart(), span: time.Hour}
	c.CreateTopic(t, d.topic, d.partitions)
	fsys, base, uri := fileSystems[0].open(t)
	cfg := baseConfig(c, "refused", d.topic, uri)
	cfg.CommitRecords = 4
	var recs []*kgo.Record
	recs = append(recs, c.mirrored(t, d, 0, 5)...)  // 5 refused
	recs = append(recs, c.mirrored(t, d, 6, 10)...) // sent before the refusal came back
	recs = append(recs, c.mirrored(t, d, 3, 15)...) // the retry from the commit at 3
	c.produce(t, recs)
	sum := runChild(t, cfg)
	if sum.Duplicates != 6 {
		t.Errorf("first run dropped %d duplicates, want 6 (3, 4, 6-9)", sum.Duplicates)
	}
	recs = append(c.mirrored(t, d, 15, 20), c.mirrored(t, d, 21, 25)...) // 20 refused
	c.produce(t, recs)
	runChild(t, cfg)
	c.produce(t, c.mirrored(t, d, 18, 30)) // the retry, in the next load
	sum = runChild(t, cfg)
	if sum.Duplicates != 6 {
		t.Errorf("third run dropped %d duplicates, want 6 (18, 19, 21-24)", sum.Duplicates)
	}
	got := readAll(t, fsys, base)
	for i := 0; i < d.n; i++ {
		if len(got[int64(i)]) != 1 {
			t.Errorf("source offset %d landed %d times", i, len(got[int64(i)]))
		} else if p := got[int64(i)][0].rec["page"]; p != page(i) {
			t.Errorf("source offset %d: page %v, want %s", i, p, page(i))
		}
	}
	if len(got) != d.n {
		t.Errorf("%d distinct ids landed, want %d", len(got), d.n)
	}
}
