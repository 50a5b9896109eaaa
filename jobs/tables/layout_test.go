package tables

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/hours"
)

// TestHiveStylePartitionsRefused: before any metastore call, Sync refuses
// a value field named like a partition column or a stored Kafka column,
// and partitions whose spec differs from the others', naming what clashes.
func TestHiveStylePartitionsRefused(t *testing.T) {
	reg := newTestRegistry(t)
	m, err := New(Config{URIs: []string{"thrift://127.0.0.1:1"}, DialTimeout: time.Second}, reg.client, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	start := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	part := func(topic string, id int, cols []string, stored hours.Stored) Partition {
		var values []string
		for range cols {
			values = append(values, "x")
		}
		return Partition{Topic: topic, Start: start, Duration: time.Hour, Location: "hdfs://nn:1/b/" + topic,
			Format: "avro", SchemaID: id, Columns: cols, Values: values, Stored: stored}
	}
	dt := reg.register(t, "a-value", `{"type":"record","name":"A","fields":[{"name":"dt","type":"string"}]}`)
	off := reg.register(t, "b-value", `{"type":"record","name":"B","fields":[{"name":"kafka_offset","type":"long"}]}`)
	ok := reg.register(t, "c-value", `{"type":"record","name":"C","fields":[{"name":"v","type":"long"}]}`)
	ctx := context.Background()
	for name, c := range map[string]struct {
		topic string
		want  []Partition
		is    error
		says  string
	}{
		"value field dt": {"a", []Partition{part("a", dt, []string{"dt", "hr"}, hours.Stored{})}, ErrBadPartition, `"dt"`},
		"value field kafka_offset": {"b", []Partition{part("b", off, []string{"dt"}, hours.Stored{Coordinates: true})},
			hours.ErrStoredColumn, "kafka_offset"},
		"specs differ": {"c", []Partition{part("c", ok, []string{"dt"}, hours.Stored{}),
			func() Partition {
				p := part("c", ok, []string{"day"}, hours.Stored{})
				p.Start = start.Add(time.Hour)
				return p
			}()},
			ErrBadPartition, "partition columns"},
	} {
		err := m.Sync(ctx, c.topic, c.want)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %s", name, err, c.is, c.says)
		}
	}
}
