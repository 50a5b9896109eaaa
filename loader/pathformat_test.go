package loader_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/hours/rows"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/filesys/filesystest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/jobs/retention"
	"github.com/tributary/tributary/jobs/tables"
	"github.com/tributary/tributary/loader"
)

// keyed is one produced record of the Hive-style test: its value id, key,
// headers and where Kafka put it.
type keyed struct {
	key       []byte
	headers   []kgo.RecordHeader
	partition int32
	offset    int64
	ts        time.Time
}

// produceKeyed produces n records (schemaV1: id, page) over an hour that
// crosses midnight, with keys (every 7th null) and headers (none, one, or
// a repeated key with a null value), and returns them by id.
func produceKeyed(t *testing.T, c *cluster, topic string, n int, start time.Time) map[int64]*kgo.Record {
	t.Helper()
	ctx := context.Background()
	recs := make([]*kgo.Record, n)
	for i := range n {
		v, err := c.ser.Encode(ctx, topic+"-value", schemaV1, map[string]any{"id": int64(i), "page": page(i)})
		if err != nil {
			t.Fatal(err)
		}
		r := &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: v, Timestamp: start.Add(time.Duration(i) * time.Hour / time.Duration(n))}
		if i%7 != 0 {
			r.Key = []byte(fmt.Sprintf("key-%d", i))
		}
		switch i % 3 {
		case 1:
			r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte(fmt.Sprintf("t-%d", i))}}
		case 2:
			r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte("x")}, {Key: "trace", Value: nil}}
		}
		recs[i] = r
	}
	c.produce(t, recs)
	out := map[int64]*kgo.Record{}
	for i, r := range recs {
		out[int64(i)] = r
	}
	return out
}

// TestPathFormatAndKafkaColumns loads a topic into the real HDFS with
// path.format 'dt'=YYYY-MM-dd/'hr'=HH and store.kafka.keys, .headers and
// .coordinates: every record lands once in the Hive-style directory of its
// hour, and both our reader (package rows, via hours.TopicData) and
// fastavro read its value, key, headers, topic, partition and offset as
// produced. A value schema with a field named like a column makes its
// records bad records naming the field; another layout for the topic and
// bad keys are refused naming the key.
func TestPathFormatAndKafkaColumns(t *testing.T) {
	c := newCluster(t)
	const topic, n = "views", 400
	start := time.Date(2026, 3, 14, 23, 30, 0, 0, time.UTC)
	c.CreateTopic(t, topic, 2)
	c.CreateTopic(t, "clash", 1)
	produced := produceKeyed(t, c, topic, n, start)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // Spark is slow on a busy machine
	defer cancel()
	clash, err := c.ser.Encode(ctx, "clash-value", `{"type":"record","name":"C","fields":[{"name":"kafka_offset","type":"long"}]}`,
		map[string]any{"kafka_offset": int64(5)})
	if err != nil {
		t.Fatal(err)
	}
	c.produce(t, []*kgo.Record{{Topic: "clash", Value: clash}})

	fsys, base, uri := filesystest.HDFSURI(t)
	props := map[string]string{"name": "hive", "bootstrap.servers": c.Addr(), "schema.registry.url": c.registry,
		"topics": "views|clash", "output.uri": uri, "audit.enable": "false",
		"path.format": "'dt'=YYYY-MM-dd/'hr'=HH", "partition.duration.ms": "3600000", "locale": "en-US", "timezone": "UTC",
		"store.kafka.keys": "true", "store.kafka.headers": "true", "store.kafka.coordinates": "true"}
	cfg, unknown, err := loader.ConfigFromProperties(props)
	if err != nil || len(unknown) > 0 {
		t.Fatalf("config: %v (unknown %v)", err, unknown)
	}
	l, err := loader.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := l.Run(ctx)
	l.Close()
	if err != nil || sum.Records != n || sum.Errors != 1 {
		t.Fatalf("run %+v, %v: want %d records and 1 bad one", sum, err, n)
	}

	list, err := hours.List(fsys, base, topic)
	if err != nil || len(list) != 2 || list[0].Dir != base+"/views/dt=2026-03-14/hr=23" || list[1].Dir != base+"/views/dt=2026-03-15/hr=00" {
		t.Fatalf("partitions %+v, %v: want dt=2026-03-14/hr=23 and dt=2026-03-15/hr=00", list, err)
	}
	layout, err := hours.ReadLayout(fsys, base, topic)
	if err != nil || layout.PathFormat != props["path.format"] || layout.Stored != (hours.Stored{Keys: true, Headers: true, Coordinates: true}) {
		t.Fatalf("layout %+v, %v", layout, err)
	}

	// Our reader.
	data, err := hours.TopicData(fsys, base, topic)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	for _, d := range data {
		if _, err := rows.Read(fsys, d, func(rec map[string]any) error {
			id := rec["id"].(int64)
			seen[id]++
			if want := layout.Dir(base, topic, produced[id].Timestamp); d.Hour.Dir != want {
				return fmt.Errorf("record %d in %s, want %s", id, d.Hour.Dir, want)
			}
			return checkColumns(produced[id], rec, func(v any) ([]byte, bool) { b, ok := v.([]byte); return b, ok })
		}); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != n {
		t.Fatalf("our reader saw %d distinct records, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("record %d read %d times", id, k)
		}
	}

	// fastavro (an independent Avro implementation) reads the same.
	rowsRead, _ := readWithFastavro(t, fsys, base+"/"+topic)
	if len(rowsRead) != n {
		t.Fatalf("fastavro read %d records, want %d", len(rowsRead), n)
	}
	for _, row := range rowsRead {
		id := row.rec["id"].(int64)
		if err := checkColumns(produced[id], row.rec, func(v any) ([]byte, bool) {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			b, err := hex.DecodeString(m["hex"].(string))
			return b, err == nil
		}); err != nil {
			t.Fatalf("fastavro, %s: %v", row.file, err)
		}
	}

	// The clashing value schema: its record is a bad record naming the field.
	errs := dataFilesUnder(t, fsys, base+"/_errors/clash")
	if len(errs) != 1 {
		t.Fatalf("errors files %v, want one", errs)
	}
	b, err := filesys.ReadFile(fsys, errs[0])
	if err != nil || !strings.Contains(string(b), `\"kafka_offset\"`) || !strings.Contains(string(b), "store.kafka.coordinates") {
		t.Fatalf("errors file: %s, %v: want the reason naming kafka_offset and store.kafka.coordinates", b, err)
	}

	// Another layout for the topic is refused, naming the keys.
	props["path.format"] = "'dt'=YYYY-MM-dd-HH"
	cfg, _, _ = loader.ConfigFromProperties(props)
	if l, err = loader.New(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	_, err = l.Run(ctx)
	l.Close()
	if !errors.Is(err, loader.ErrInvalidConfig) || !strings.Contains(err.Error(), "path.format") {
		t.Fatalf("another path.format for the topic: %v, want a configuration error naming path.format", err)
	}

	// The Hive table: partitioned by dt and hr, with the Kafka columns,
	// read by Spark SQL over a Parquet partition (the first hour, compacted
	// and registered by compaction) and an Avro one (the second, not closed
	// yet, registered here as its directory).
	fsURI := "hdfs://" + testenv.HDFS(t)
	db := fmt.Sprintf("loader_test_%d", time.Now().UnixNano()%1e9)
	ms, err := tables.New(tables.Config{URIs: []string{testenv.HiveMetastore(t)}, Database: db, FileSystem: fsURI},
		c.reg, tables.Options{Logger: testenv.Logger(t, 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	if sum := compactLayout(t, ctx, fsys, base, topic, produced, n, list[0].End(), ms); sum.HoursCompacted != 1 {
		t.Fatalf("compaction through the first hour: %+v", sum)
	}
	parts, err := hours.PublishedPartitions(fsys, base, topic, nil)
	if err != nil || len(parts) != 1 || parts[0].Format != "parquet" || !slices.Equal(parts[0].Values, []string{"2026-03-14", "23"}) {
		t.Fatalf("published %+v, %v: want dt=2026-03-14/hr=23 in Parquet", parts, err)
	}
	parts = append(parts, hours.Partition{Topic: topic, Start: list[1].Start, Duration: time.Hour, Location: list[1].Dir,
		Format: "avro", SchemaID: parts[0].SchemaID, Columns: layout.Columns(), Values: layout.Values(list[1].Start), Stored: layout.Stored})
	if err := ms.Sync(ctx, topic, parts); err != nil {
		t.Fatal(err)
	}
	query := fmt.Sprintf(`SELECT dt, hr, id, page, coalesce(hex(kafka_key), '<null>') AS k,
		concat_ws(',', transform(kafka_headers, x -> concat(x.key, '=', coalesce(hex(x.value), '<null>')))) AS h,
		kafka_topic, kafka_partition, kafka_offset FROM %s.views`, db)
	spark := testenv.SparkSQL(t, testenv.HiveMetastore(t), query, "SHOW PARTITIONS "+db+".views")
	if err := checkSparkRows(spark[0], produced, layout, n); err != nil {
		t.Errorf("Spark over a Parquet and an Avro partition: %v", err)
	}
	if fmt.Sprint(spark[1]) != "[map[partition:dt=2026-03-14/hr=23] map[partition:dt=2026-03-15/hr=00]]" {
		t.Errorf("SHOW PARTITIONS: %v", spark[1])
	}
	if sum := compactLayout(t, ctx, fsys, base, topic, produced, n, time.Now(), ms); sum.HoursCompacted != 1 {
		t.Fatalf("compaction of the second hour: %+v", sum)
	}
	if got := tablePartitions(t, ctx, ms, fsys, base, topic); got != 2 {
		t.Fatalf("registered partitions after compaction: %d, want 2", got)
	}

	// Recompaction and retention follow the layout.
	late := produceKeyed(t, c, topic, 1, start.Add(10*time.Minute))[0]
	produced[n] = late // id 0 again: the late copy reads as id 0 with its own coordinates
	props["path.format"] = "'dt'=YYYY-MM-dd/'hr'=HH"
	cfg, _, _ = loader.ConfigFromProperties(props)
	if l, err = loader.New(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if sum, err := l.Run(ctx); err != nil || sum.Records != 1 {
		t.Fatalf("late run %+v, %v", sum, err)
	}
	l.Close()
	recompacted := compactLayout(t, ctx, fsys, base, topic, produced, n+1, time.Now(), nil)
	if recompacted.HoursRecompacted != 1 {
		t.Fatalf("second compaction %+v: want the late file's hour recompacted", recompacted)
	}
	rs, err := retention.Run(ctx, retention.Config{FS: fsys, Base: base, Topics: map[string]time.Duration{topic: time.Hour},
		Now: func() time.Time { return start.Add(90 * time.Minute) }})
	if err != nil || rs.HoursRemoved != 1 {
		t.Fatalf("retention %+v, %v: want the first hour removed", rs, err)
	}
	if list, err := hours.List(fsys, base, topic); err != nil || len(list) != 1 || list[0].Dir != base+"/views/dt=2026-03-15/hr=00" {
		t.Fatalf("after retention: %+v, %v", list, err)
	}
	if ok, _ := filesys.Exists(fsys, base+"/views/dt=2026-03-14"); ok {
		t.Fatalf("retention left the emptied dt=2026-03-14 directory")
	}
}

// compactLayout compacts the loaded topic and checks that every hour is
// compacted into its generation directory beside the Hive-style hour
// directory, and that the Parquet rows hold the values and Kafka columns
// produced (want: n records by id; id n is a late copy of id 0).
func compactLayout(t *testing.T, ctx context.Context, fsys filesys.FS, base, topic string, produced map[int64]*kgo.Record, n int,
	through time.Time, cat hours.Catalog) compact.Summary {
	t.Helper()
	cp, err := compact.New(compact.Config{FS: fsys, Base: base, Topics: []string{topic}, Catalog: cat, Delay: time.Nanosecond,
		ClosedThrough: func(context.Context) (time.Time, error) { return through.Add(time.Nanosecond), nil }})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := cp.Run(ctx)
	if err != nil {
		t.Fatalf("compaction %+v: %v", sum, err)
	}
	sts, err := hours.Statuses(fsys, base, topic, through.Add(time.Nanosecond), time.Nanosecond)
	if err != nil || len(sts) != 2 {
		t.Fatalf("statuses %+v, %v", sts, err)
	}
	compacted := map[string]bool{}
	for _, st := range sts {
		if st.End.After(through) {
			if st.State != hours.StateLoading {
				t.Fatalf("hour %s: %+v, want loading", st.Hour, st)
			}
			continue
		}
		compacted[st.Hour.Dir] = true
		if st.State != hours.StateCompacted || st.Format != hours.Parquet || path.Dir(st.Location) != path.Dir(st.Hour.Dir) ||
			!strings.HasPrefix(path.Base(st.Location), path.Base(st.Hour.Dir)+".c") || st.LateFiles != 0 {
			t.Fatalf("hour %s: %+v, want compacted into a generation beside %s", st.Hour, st, st.Hour.Dir)
		}
	}
	data, err := hours.TopicData(fsys, base, topic)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]int64]bool{} // (partition, offset)
	for _, d := range data {
		if compacted[d.Hour.Dir] != (d.Format == hours.Parquet) {
			t.Fatalf("%s: %s after compaction", d.Path(), d.Format)
		}
		if _, err := rows.Read(fsys, d, func(rec map[string]any) error {
			k := [2]int64{int64(rec[hours.ColumnPartition].(int32)), rec[hours.ColumnOffset].(int64)}
			if seen[k] {
				return fmt.Errorf("partition %d offset %d read twice", k[0], k[1])
			}
			seen[k] = true
			r := produced[rec["id"].(int64)]
			if l := produced[int64(n-1)]; n > 400 && l.Partition == int32(k[0]) && l.Offset == k[1] {
				r = l
			}
			return checkColumns(r, rec, func(v any) ([]byte, bool) { b, ok := v.([]byte); return b, ok })
		}); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != n {
		t.Fatalf("compacted rows: %d, want %d", len(seen), n)
	}
	return sum
}

// checkColumns compares a loaded record's value and Kafka columns with
// what was produced; asBytes reads a bytes value as the reader gives it.
func checkColumns(r *kgo.Record, rec map[string]any, asBytes func(any) ([]byte, bool)) error {
	id := rec["id"].(int64)
	num := func(v any) int64 {
		switch v := v.(type) {
		case json.Number:
			n, _ := v.Int64()
			return n
		case int32:
			return int64(v)
		case int64:
			return v
		}
		return -1
	}
	if rec["page"] != page(int(id)) || rec[hours.ColumnTopic] != r.Topic || num(rec[hours.ColumnPartition]) != int64(r.Partition) ||
		num(rec[hours.ColumnOffset]) != r.Offset {
		return fmt.Errorf("record %d: %v, want page %s at %s/%d@%d", id, rec, page(int(id)), r.Topic, r.Partition, r.Offset)
	}
	if k := rec[hours.ColumnKey]; r.Key == nil && k != nil {
		return fmt.Errorf("record %d: key %v, want null", id, k)
	} else if b, ok := asBytes(k); r.Key != nil && (!ok || !bytes.Equal(b, r.Key)) {
		return fmt.Errorf("record %d: key %v, want %q", id, k, r.Key)
	}
	hs, ok := rec[hours.ColumnHeaders].([]any)
	if !ok || len(hs) != len(r.Headers) {
		return fmt.Errorf("record %d: headers %v, want %v", id, rec[hours.ColumnHeaders], r.Headers)
	}
	for i, h := range hs {
		m, _ := h.(map[string]any)
		want := r.Headers[i]
		b, ok := asBytes(m["value"])
		if m["key"] != want.Key || (want.Value == nil) != (m["value"] == nil) || (want.Value != nil && (!ok || !bytes.Equal(b, want.Value))) {
			return fmt.Errorf("record %d: header %d %v, want %s=%q", id, i, m, want.Key, want.Value)
		}
	}
	if len(rec) != 7 {
		return fmt.Errorf("record %d has fields %v, want id, page and the five Kafka columns", id, rec)
	}
	return nil
}

// dataFilesUnder lists the files below dir (recursively), as paths.
func dataFilesUnder(t *testing.T, fsys filesys.FS, dir string) []string {
	t.Helper()
	var out []string
	for _, f := range dataFiles(t, fsys, dir) {
		out = append(out, path.Join(dir, f))
	}
	return out
}

// TestPathFormatConfigRefused: a pattern that is malformed or cannot tell
// the partitions apart, and a zone other than UTC, are refused naming the
// key.
func TestPathFormatConfigRefused(t *testing.T) {
	base := map[string]string{"name": "x", "bootstrap.servers": "h:1", "schema.registry.url": "http://r", "topics": "t", "output.uri": "/o"}
	for _, c := range []struct{ key, value, extra, why string }{
		{"path.format", "'dt'=YYYY-MM-dd", "", "hour (HH)"},
		{"path.format", "YYYY/MM/dd/HH", "300000", "minute (mm)"},
		{"path.format", "YYYY/MM/dd/HH/ss", "", "not a supported pattern letter"},
		{"path.format", "'dt'=YYYY-MM-dd/HH", "", "Hive-style"},
		{"timezone", "America/Los_Angeles", "", "only UTC"},
		{"locale", "en US", "", "language tag"},
		{"store.kafka.keys", "yes please", "", "store.kafka.keys"},
	} {
		props := map[string]string{c.key: c.value}
		for k, v := range base {
			props[k] = v
		}
		if c.extra != "" {
			props["partition.duration.ms"] = c.extra
		}
		_, _, err := loader.ConfigFromProperties(props)
		if !errors.Is(err, loader.ErrInvalidConfig) || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s=%q: %v, want a configuration error naming %s and saying %q", c.key, c.value, err, c.key, c.why)
		}
	}
}

// checkSparkRows compares Spark's rows of the views table with the n
// records produced: partition columns, value, key, headers and
// coordinates, each record once.
func checkSparkRows(got []map[string]any, produced map[int64]*kgo.Record, layout hours.Layout, n int) error {
	want := map[string]bool{}
	for id := int64(0); id < int64(n); id++ {
		r := produced[id]
		v := layout.Values(r.Timestamp.UTC().Truncate(time.Hour))
		k := "<null>"
		if r.Key != nil {
			k = strings.ToUpper(hex.EncodeToString(r.Key))
		}
		var hs []string
		for _, h := range r.Headers {
			hv := "<null>"
			if h.Value != nil {
				hv = strings.ToUpper(hex.EncodeToString(h.Value))
			}
			hs = append(hs, h.Key+"="+hv)
		}
		want[fmt.Sprintf("%s|%s|%d|%s|%s|%s|%s|%d|%d", v[0], v[1], id, page(int(id)), k, strings.Join(hs, ","), r.Topic, r.Partition, r.Offset)] = true
	}
	seen := map[string]bool{}
	for _, row := range got {
		s := fmt.Sprintf("%v|%v|%.0f|%v|%v|%v|%v|%.0f|%.0f", row["dt"], row["hr"], row["id"], row["page"], row["k"], row["h"],
			row["kafka_topic"], row["kafka_partition"], row["kafka_offset"])
		if !want[s] || seen[s] {
			return fmt.Errorf("row %s: not produced, or read twice", s)
		}
		seen[s] = true
	}
	if len(seen) != len(want) {
		return fmt.Errorf("%d rows, want %d", len(seen), len(want))
	}
	return nil
}

// tablePartitions syncs the catalog with what the files publish and
// returns how many partitions that is (every one compacted and at its
// generation directory, or the test fails).
func tablePartitions(t *testing.T, ctx context.Context, cat hours.Catalog, fsys filesys.FS, base, topic string) int {
	t.Helper()
	parts, err := hours.PublishedPartitions(fsys, base, topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if p.Format != "parquet" || !strings.Contains(path.Base(p.Location), ".c") {
			t.Fatalf("published %+v: want Parquet in a generation directory", p)
		}
	}
	if err := cat.Sync(ctx, topic, parts); err != nil {
		t.Fatal(err)
	}
	return len(parts)
}
