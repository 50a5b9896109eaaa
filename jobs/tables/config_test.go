package tables

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/properties"
)

func TestConfigFromProperties(t *testing.T) {
	p := properties.New(map[string]string{
		"hive.integration": "true", "hive.metastore.uris": "thrift://a:9083, thrift://b:9084",
		"hive.database": "logs", "hive.table.name": "kafka_${topic}", "schema.compatibility": "full",
	})
	c, err := ConfigFromProperties(p)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Enabled || len(c.URIs) != 2 || c.URIs[1] != "thrift://b:9084" || c.Database != "logs" || c.Compatibility != "FULL" {
		t.Fatalf("config %+v", c)
	}
	if got := c.Table("page-views.v1"); got != "kafka_page_views_v1" {
		t.Fatalf("table name %q", got)
	}
	if u := p.Unknown(); len(u) != 0 {
		t.Fatalf("keys not read: %v", u)
	}
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	for key, props := range map[string]map[string]string{
		"hive.metastore.uris":  {"hive.integration": "true"},
		"hive.metastore.uris ": {"hive.integration": "true", "hive.metastore.uris": "http://a:9083"},
		"schema.compatibility": {"hive.integration": "true", "hive.metastore.uris": "thrift://a:1", "schema.compatibility": "NONE"},
		"hive.database":        {"hive.integration": "true", "hive.metastore.uris": "thrift://a:1", "hive.database": "my-db"},
		"hive.integration":     {"hive.integration": "maybe"},
	} {
		_, err := ConfigFromProperties(properties.New(props))
		if err == nil || !strings.Contains(err.Error(), strings.TrimSpace(key)) {
			t.Errorf("%v: err = %v, want one naming %s", props, err, key)
		}
	}
	// Disabled: nothing else is checked.
	if _, err := ConfigFromProperties(properties.New(map[string]string{})); err != nil {
		t.Fatal(err)
	}
}

func TestPartitionValue(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		time.Hour: "2026-03-04-05", 24 * time.Hour: "2026-03-04-05",
		10 * time.Minute: "2026-03-04-05-06", 30 * time.Second: "2026-03-04-05-06-07",
	} {
		if got := PartitionValue(at, d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}

func TestCheckPartitionsRefusesMalformedWants(t *testing.T) {
	h := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	ok := Partition{Topic: "t", Start: h, Duration: time.Hour, Location: "hdfs://nn:8020/x", Format: "avro", SchemaID: 1}
	if err := checkPartitions("t", []Partition{ok}, false); err != nil {
		t.Fatal(err)
	}
	bare := ok
	bare.Location = "/base/t/2026/03/04/05"
	if err := checkPartitions("t", []Partition{bare}, true); err != nil {
		t.Fatalf("an absolute path with a file system: %v", err)
	}
	for name, mod := range map[string]func(*Partition){
		"unaligned":   func(p *Partition) { p.Start = h.Add(time.Minute) },
		"format":      func(p *Partition) { p.Format = "orc" },
		"bare path":   func(p *Partition) { p.Location = "/x" },
		"relative":    func(p *Partition) { p.Location = "x/y" },
		"no schema":   func(p *Partition) { p.SchemaID = 0 },
		"other topic": func(p *Partition) { p.Topic = "u" },
		"duration":    func(p *Partition) { p.Duration = 0 },
	} {
		p := ok
		mod(&p)
		if err := checkPartitions("t", []Partition{p}, false); !errors.Is(err, ErrBadPartition) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if err := checkPartitions("t", []Partition{ok, ok}, false); !errors.Is(err, ErrBadPartition) {
		t.Errorf("twice: err = %v", err)
	}
}

// TestOpen: the one constructor from properties returns no metastore with
// hive.integration=false, refuses an enabled configuration without a
// schema registry, and gives partition locations the base's file system.
func TestOpen(t *testing.T) {
	m, _, err := Open(properties.New(map[string]string{"hive.integration": "false"}), "file:///tmp/x", Options{})
	if m != nil || err != nil {
		t.Fatalf("hive.integration=false: %v, %v; want no metastore, no error", m, err)
	}
	_, _, err = Open(properties.New(map[string]string{"hive.integration": "true", "hive.metastore.uris": "thrift://127.0.0.1:9083"}), "/tmp/x", Options{})
	if !errors.Is(err, ErrNoRegistry) || !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("no schema.registry.url: %v; want ErrNoRegistry", err)
	}
	m, cfg, err := Open(properties.New(map[string]string{"hive.integration": "true", "hive.metastore.uris": "thrift://127.0.0.1:9083",
		"schema.registry.url": "http://127.0.0.1:8081"}), "hdfs://namenode:8020/data", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if cfg.FileSystem != "hdfs://namenode:8020" {
		t.Fatalf("FileSystem %q; want hdfs://namenode:8020", cfg.FileSystem)
	}
	for base, want := range map[string]string{"/data": "file:///", "file:///data": "file:///", "hdfs://nn:1/x": "hdfs://nn:1"} {
		if got := FileSystemOf(base); got != want {
			t.Errorf("FileSystemOf(%q) = %q; want %q", base, got, want)
		}
	}
}
