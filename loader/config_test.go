package loader_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/loader"
)

func TestConfigFromProperties(t *testing.T) {
	good := map[string]string{
		"name": "hourly", "bootstrap.servers": "a:9092, b:9092", "schema.registry.url": "http://r:8081",
		"topics": "page-views|clicks", "output.uri": "hdfs://nn:9000/data", "codec": "snappy",
		"commit.records": "5000", "commit.interval.ms": "30000", "zookeeper.connect": "zk:2181/t",
		"audit.cluster": "analytics", "audit.window.ms": "60000", "audit.enable": "true", "bogus": "1",
	}
	cfg, unknown, err := loader.ConfigFromProperties(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 1 || unknown[0] != "bogus" {
		t.Errorf("unknown keys %v", unknown)
	}
	if cfg.Name != "hourly" || len(cfg.Brokers) != 2 || cfg.Brokers[1] != "b:9092" || cfg.Codec != "snappy" ||
		cfg.CommitRecords != 5000 || cfg.CommitInterval != 30*time.Second || cfg.AuditWindow != time.Minute ||
		cfg.ZooKeeperConnect != "zk:2181/t" || cfg.AuditDisable || cfg.ClientID != "" || cfg.IsolationLevel != "" {
		t.Errorf("config %+v", cfg)
	}
	withID := map[string]string{"client.id": "loader-hourly"}
	for k, v := range good {
		withID[k] = v
	}
	if c, _, err := loader.ConfigFromProperties(withID); err != nil || c.ClientID != "loader-hourly" {
		t.Errorf("client.id: %q %v", c.ClientID, err)
	}
	withID["isolation.level"] = loader.ReadUncommitted
	if c, _, err := loader.ConfigFromProperties(withID); err != nil || c.IsolationLevel != loader.ReadUncommitted {
		t.Errorf("isolation.level: %q %v", c.IsolationLevel, err)
	}
	for key, val := range map[string]string{
		"name": "", "bootstrap.servers": "", "schema.registry.url": "", "topics": "(", "output.uri": "",
		"codec": "lzma", "commit.records": "-1", "commit.interval.ms": "soon", "audit.enable": "maybe",
		"isolation.level": "read_dirty",
	} {
		props := map[string]string{}
		for k, v := range good {
			props[k] = v
		}
		props[key] = val
		_, _, err := loader.ConfigFromProperties(props)
		if !errors.Is(err, loader.ErrInvalidConfig) || !strings.Contains(err.Error(), strings.Split(key, ".")[0]) {
			t.Errorf("%s=%q: %v, want an ErrInvalidConfig naming the key", key, val, err)
		}
	}
}
