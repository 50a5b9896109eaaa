package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/internal/brokertest"
	"github.com/tributary/tributary/internal/registrytest"
	"github.com/tributary/tributary/internal/testproc"
)

// loaderFixture is what the loader and jobs commands read in these tests:
// a broker, a schema registry, and a producer of Avro values with schema
// IDs.
type loaderFixture struct {
	broker      *brokertest.Cluster
	registryURL string
	ser         *serde.Serializer
	cl          *kgo.Client
	dir         string // for properties files
}

func newLoaderFixture(t *testing.T) *loaderFixture {
	t.Helper()
	url := registrytest.Serve(t)
	rc, err := serde.NewRegistryClient(serde.ClientConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	b := brokertest.New(t)
	return &loaderFixture{broker: b, registryURL: url, ser: serde.NewSerializer(rc, serde.SerializerConfig{}),
		cl: b.Client(t), dir: t.TempDir()}
}

// produce writes value, encoded with schema under topic's value subject,
// with timestamp ts (the zero time: the producer's clock).
func (f *loaderFixture) produce(ctx context.Context, t *testing.T, topic, schema string, value map[string]any, ts time.Time) {
	t.Helper()
	v, err := f.ser.Encode(ctx, topic+"-value", schema, value)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: v, Timestamp: ts}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// loaderProps are the properties of a loader job "hourly" reading topics
// into out, without audit; a test adds or changes keys.
func (f *loaderFixture) loaderProps(topics, out string) map[string]string {
	return map[string]string{"name": "hourly", "bootstrap.servers": f.broker.Addr(), "schema.registry.url": f.registryURL,
		"topics": topics, "output.uri": "file://" + out, "audit.enable": "false"}
}

// writeProps writes props as the properties file name in the fixture's
// directory and returns its path.
func (f *loaderFixture) writeProps(t *testing.T, name string, props map[string]string) string {
	return testproc.WriteProperties(t, f.dir, name, props)
}

// TestLoaderRunCommand runs `tributary loader run` on a properties file:
// exit 0, the summary line, the --summary-json file, the data; then a bad
// configuration fails naming the key.
func TestLoaderRunCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newLoaderFixture(t)
	f.broker.CreateTopic(t, "clicks", 2)
	const sch = `{"type":"record","name":"Click","fields":[{"name":"n","type":"long"}]}`
	for i := range 100 {
		f.produce(ctx, t, "clicks", sch, map[string]any{"n": int64(i)}, time.Time{})
	}
	out := t.TempDir()
	props := f.loaderProps("click.*", out)
	conf := f.writeProps(t, "loader.properties", props)
	summary := filepath.Join(f.dir, "summary.json")
	res := mustRun(t, "", "loader", "run", "--config", conf, "--summary-json", summary, "--log-level", "warn")
	if !strings.Contains(res.stdout, "loader hourly: 100 records, ") {
		t.Errorf("summary line missing: %q", res.stdout)
	}
	var sum struct{ Records, Files, Bytes, Errors int64 }
	raw, err := os.ReadFile(summary)
	if err != nil || json.Unmarshal(raw, &sum) != nil || sum.Records != 100 || sum.Files < 1 || sum.Bytes == 0 {
		t.Errorf("summary json %s: %v %+v", raw, err, sum)
	}
	var files []string
	filepath.WalkDir(filepath.Join(out, "clicks"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if int64(len(files)) != sum.Files {
		t.Errorf("%d data files, summary says %d", len(files), sum.Files)
	}

	props["commit.records"] = "lots"
	conf = f.writeProps(t, "bad.properties", props)
	if res := runCLI(t, time.Minute, "", "loader", "run", "--config", conf); res.err == nil || !strings.Contains(res.err.Error(), "commit.records") {
		t.Errorf("bad config: %v, want an error naming commit.records", res.err)
	}
}
