package tailtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/devcluster"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// Config says what to create. Zero values mean defaults.
type Config struct {
	// Topics are created with Partitions partitions (default 1) each.
	Topics     []string
	Partitions int32
	// Prefix names the HDFS output directory: /<Prefix>-<random hex>;
	// default "tail".
	Prefix string
}

// Tail is a running analytics cluster with a registry and an HDFS output.
type Tail struct {
	Cluster *devcluster.Cluster
	// Kafka is a client of Cluster with the manual partitioner: a
	// record goes to the partition it names.
	Kafka      *kgo.Client
	Registry   *serde.RegistryClient
	Serializer *serde.Serializer
	// FS and Base are the output directory (Base a path on FS);
	// BaseURI is it as the loader's output.uri (hdfs://host:port/path).
	FS      filesys.FS
	Base    string
	BaseURI string
}

// Start starts a Tail for t; everything is closed when t ends.
func Start(t testing.TB, cfg Config) *Tail {
	t.Helper()
	if cfg.Partitions == 0 {
		cfg.Partitions = 1
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "tail"
	}
	ctx := context.Background()
	tl := &Tail{}
	var err error
	if tl.Cluster, err = devcluster.Start(ctx, devcluster.Config{Dir: t.TempDir(), Registry: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Cluster.Close() })
	if tl.Kafka, err = kgo.NewClient(kgo.SeedBrokers(tl.Cluster.Bootstrap()...), kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tl.Kafka.Close)
	if len(cfg.Topics) > 0 {
		resps, err := kadm.NewClient(tl.Kafka).CreateTopics(ctx, cfg.Partitions, 1, nil, cfg.Topics...)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			t.Fatalf("create topics %v: %v", cfg.Topics, err)
		}
	}
	if tl.Registry, err = serde.NewRegistryClient(serde.ClientConfig{URL: tl.Cluster.RegistryURL()}); err != nil {
		t.Fatal(err)
	}
	tl.Serializer = serde.NewSerializer(tl.Registry, serde.SerializerConfig{})
	var rb [6]byte
	_, _ = rand.Read(rb[:])
	tl.BaseURI = "hdfs://" + testenv.HDFS(t) + "/" + cfg.Prefix + "-" + hex.EncodeToString(rb[:])
	if tl.FS, tl.Base, err = filesys.Open(ctx, tl.BaseURI); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = tl.FS.RemoveAll(tl.Base)
		}
		tl.FS.Close()
	})
	return tl
}
