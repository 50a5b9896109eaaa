package icetable

import (
	"errors"
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/properties"
)

func TestConfigFromProperties(t *testing.T) {
	p := properties.New(map[string]string{
		"iceberg.catalog.type": "Hive", "iceberg.catalog.uri": "thrift://m:9083",
		"iceberg.catalog.warehouse": "hdfs://nn:8020/warehouse", "iceberg.namespace": "kafka",
		"iceberg.tables.default-partition-by": "hours(event_time)", "iceberg.commit.retries": "3",
		"hdfs.authentication.kerberos": "true", "connect.hdfs.principal": "loader@EXAMPLE.COM",
		"connect.hdfs.keytab": "/k.keytab", "hdfs.namenode.principal": "hdfs/_HOST@EXAMPLE.COM",
	})
	c := FromProperties(p)
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	if c.Type != CatalogHive || c.URI != "thrift://m:9083" || c.Namespace != "kafka" || c.PartitionField != "event_time" ||
		c.CommitRetries != 3 || c.HDFS.Kerberos == nil || c.HDFS.Kerberos.Principal != "loader@EXAMPLE.COM" {
		t.Errorf("config %+v", c)
	}
	c.HDFS.Kerberos = nil // Validate would stat the keytab
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Name != DefaultCatalogName {
		t.Errorf("name %q, want the default", c.Name)
	}
	p = properties.New(map[string]string{"iceberg.tables.default-partition-by": "days(x)"})
	FromProperties(p)
	if err := p.Err(); err == nil || !strings.Contains(err.Error(), "iceberg.tables.default-partition-by") {
		t.Errorf("err %v, want one naming the key", err)
	}
}

func TestConfigValidateNamesKey(t *testing.T) {
	for _, tc := range []struct {
		c   Config
		key string
	}{
		{Config{Type: "rest", URI: "x", Warehouse: "file:///w"}, "iceberg.catalog.type"},
		{Config{Warehouse: "file:///w"}, "iceberg.catalog.uri"},
		{Config{Type: CatalogHive, URI: "http://m", Warehouse: "file:///w"}, "iceberg.catalog.uri"},
		{Config{URI: "c.db"}, "iceberg.catalog.warehouse"},
		{Config{URI: "c.db", Warehouse: "s3://b/w"}, "iceberg.catalog.warehouse"},
		{Config{URI: "c.db", Warehouse: "hdfs://nohost/w"}, "iceberg.catalog.warehouse"},
		{Config{URI: "c.db", Warehouse: "file:///w", CommitRetries: -1}, "iceberg.commit.retries"},
	} {
		err := tc.c.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%+v: err %v, want ErrInvalidConfig naming %s", tc.c, err, tc.key)
		}
	}
}

// TestSQLCatalogURIForms: the SQLite file of a sql catalog may be given as
// a path, file:///path or pyiceberg's sqlite:///path; other schemes are
// refused naming the key.
func TestSQLCatalogURIForms(t *testing.T) {
	for uri, want := range map[string]string{
		"/d/c.db": "/d/c.db", "file:///d/c.db": "/d/c.db", "sqlite:///d/c.db": "/d/c.db", "c.db": "c.db",
	} {
		c := Config{URI: uri, Warehouse: "file:///w"}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", uri, err)
		}
		if got := sqlitePath(uri); got != want {
			t.Errorf("sqlitePath(%q) = %q, want %q", uri, got, want)
		}
	}
	c := Config{URI: "postgresql://h/db", Warehouse: "file:///w"}
	if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "iceberg.catalog.uri") {
		t.Errorf("postgresql uri: err %v", err)
	}
}
