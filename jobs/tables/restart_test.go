package tables

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hms "github.com/beltran/gohive/hive_metastore"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

const eventV1 = `{"type":"record","name":"Event","namespace":"test.tables","fields":[
 {"name":"datacenter","type":"string"},
 {"name":"producer","type":"string"},
 {"name":"seq","type":"long"},
 {"name":"note","type":["null","string"],"default":null}]}`

// localPartitions returns n hourly partitions of topic in local
// directories (file:// locations: this test is about the catalog alone).
func localPartitions(t *testing.T, topic string, start time.Time, n, schemaID int) []Partition {
	t.Helper()
	dir := t.TempDir()
	var out []Partition
	for i := 0; i < n; i++ {
		h := start.Add(time.Duration(i) * time.Hour)
		loc := filepath.Join(dir, topic, h.Format("2006/01/02/15"))
		if err := os.MkdirAll(loc, 0o755); err != nil {
			t.Fatal(err)
		}
		out = append(out, Partition{Topic: topic, Start: h, Duration: time.Hour, Location: "file://" + loc, Format: "avro", SchemaID: schemaID})
	}
	return out
}

// The metastore stopped and started again: Sync fails fast and clearly
// while it is down, succeeds once it is back (on a new connection), and
// partitions are never registered twice; the reconcile also alters and
// drops.
func TestSyncAcrossMetastoreRestart(t *testing.T) {
	own := testenv.StartHiveMetastore(t, "")
	reg := newTestRegistry(t)
	const topic = "restart.events"
	id := reg.register(t, topic+"-value", eventV1)
	metrics := prometheus.NewRegistry()
	m := newTestMetastore(t, own.URI, "restart_test", "", reg, Options{Logger: testenv.Logger(t, -4), Metrics: metrics})

	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	parts := localPartitions(t, topic, start, 4, id)
	// Nothing ready yet: no table (it would have no location).
	syncOK(t, m, topic, nil)
	m.mu.Lock()
	cl, err := m.conn.get(context.Background())
	if err == nil {
		_, err = cl.GetTableReq(context.Background(), &hms.GetTableRequest{DbName: "restart_test", TblName: "restart_events"})
	}
	m.mu.Unlock()
	if !isNoSuchObject(err) {
		t.Fatalf("a sync wanting nothing: get table: %v, want no such table", err)
	}
	syncOK(t, m, topic, parts[:2])
	syncOK(t, m, topic, parts[:2]) // idempotent
	if got := registered(t, m, topic); len(got) != 2 {
		t.Fatalf("after the first syncs: %v", got)
	}

	own.Stop(t)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = m.Sync(ctx, topic, parts[:3])
	cancel()
	took := time.Since(began)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), topic) || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("sync with the metastore down: err = %v, want ErrUnavailable naming the topic and the address", err)
	}
	if took > 10*time.Second {
		t.Fatalf("sync with the metastore down took %v: the dial timeout does not bound it", took)
	}
	t.Logf("sync with the metastore down failed in %v: %v", took, err)
	if n := testutil.ToFloat64(m.metrics.syncs.WithLabelValues(topic, "unavailable")); n != 1 {
		t.Fatalf("unavailable syncs counted %v, want 1", n)
	}

	own.Start(t)
	syncOK(t, m, topic, parts[:3])
	syncOK(t, m, topic, parts[:3])
	got := registered(t, m, topic)
	if len(got) != 3 {
		t.Fatalf("after the restart: %d partitions %v, want 3", len(got), got)
	}
	for _, p := range parts[:3] {
		v := PartitionValue(p.Start, p.Duration)
		if want := "AvroSerDe " + p.Location + " datacenter,producer,seq,note"; normalize(got)[v] != normalize(map[string]string{v: want})[v] {
			t.Errorf("partition %s: %q, want %q", v, got[v], want)
		}
	}

	// Reconcile: partition 0 moves to Parquet elsewhere, 1 is dropped
	// (retention), 3 is added.
	moved := parts[0]
	moved.Format, moved.Location = "parquet", parts[0].Location+"/v1"
	if err := os.MkdirAll(strings.TrimPrefix(moved.Location, "file://"), 0o755); err != nil {
		t.Fatal(err)
	}
	syncOK(t, m, topic, []Partition{moved, parts[2], parts[3]})
	got = registered(t, m, topic)
	want := map[string]string{
		PartitionValue(moved.Start, time.Hour):    "ParquetHiveSerDe " + moved.Location + " datacenter,producer,seq,note",
		PartitionValue(parts[2].Start, time.Hour): "AvroSerDe " + parts[2].Location + " datacenter,producer,seq,note",
		PartitionValue(parts[3].Start, time.Hour): "AvroSerDe " + parts[3].Location + " datacenter,producer,seq,note",
	}
	if fmt.Sprint(normalize(got)) != fmt.Sprint(normalize(want)) {
		t.Fatalf("after the reconcile:\n%v\nwant\n%v", got, want)
	}
	// The partition directories of a dropped partition stay (EXTERNAL).
	if _, err := os.Stat(strings.TrimPrefix(parts[1].Location, "file://")); err != nil {
		t.Fatalf("the dropped partition's directory: %v", err)
	}
	if n := testutil.ToFloat64(m.metrics.syncs.WithLabelValues(topic, "ok")); n != 6 {
		t.Fatalf("ok syncs counted %v, want 6", n)
	}
}

// normalize writes file:///x as file:/x, as the metastore stores some locations.
func normalize(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = strings.ReplaceAll(v, "file:///", "file:/")
	}
	return out
}
