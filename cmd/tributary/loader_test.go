package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/registrytest"
	"github.com/tributary/tributary/internal/testkit/testproc"
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
	if !strings.Contains(res.stdout, "loader hourly: 100 records (") {
		t.Errorf("summary line missing: %q", res.stdout)
	}
	var sum struct {
		Records, Files, Errors int64
		RecordBytes            int64 `json:"record_bytes"`
		FileBytes              int64 `json:"file_bytes"`
	}
	raw, err := os.ReadFile(summary)
	if err != nil || json.Unmarshal(raw, &sum) != nil || sum.Records != 100 || sum.Files < 1 {
		t.Errorf("summary json %s: %v %+v", raw, err, sum)
	}
	var files []string
	var size int64
	filepath.WalkDir(filepath.Join(out, "clicks"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
			fi, _ := d.Info()
			size += fi.Size()
		}
		return nil
	})
	if int64(len(files)) != sum.Files {
		t.Errorf("%d data files, summary says %d", len(files), sum.Files)
	}
	// Record bytes are the values as produced (5 bytes of framing and a
	// zigzag long each, no keys); file bytes what the directory grew by.
	var recordBytes int64
	for i := range 100 {
		recordBytes += 5 + int64(len(binary.AppendVarint(nil, int64(i))))
	}
	if sum.RecordBytes != recordBytes || sum.FileBytes != size {
		t.Errorf("record_bytes %d, file_bytes %d; want %d and the files' %d", sum.RecordBytes, sum.FileBytes, recordBytes, size)
	}
	if want := fmt.Sprintf("100 records (%d record bytes), %d files (%d file bytes), ", recordBytes, sum.Files, size); !strings.Contains(res.stdout, want) {
		t.Errorf("summary line %q, want %q in it", res.stdout, want)
	}

	props["commit.records"] = "lots"
	conf = f.writeProps(t, "bad.properties", props)
	if res := runCLI(t, time.Minute, "", "loader", "run", "--config", conf); res.err == nil || !strings.Contains(res.err.Error(), "commit.records") {
		t.Errorf("bad config: %v, want an error naming commit.records", res.err)
	}
}

// TestLoaderPropertiesCommentsAndTypos: a properties file written as the
// README once had it (comments after values, issue 39) is refused where
// the value cannot be meant (output.uri) and warned about with its line
// where it can (topics); a topics expression that matches no topic fails
// `loader run` naming the expression and the topics there are.
func TestLoaderPropertiesCommentsAndTypos(t *testing.T) {
	f := newLoaderFixture(t)
	f.broker.CreateTopic(t, "clicks", 1)
	f.broker.CreateTopic(t, "views", 1)
	out := t.TempDir()
	write := func(name, outputURI, topics string) string {
		text := "# the README's block\n" +
			"name=hourly\n" +
			"bootstrap.servers=" + f.broker.Addr() + "\n" +
			"schema.registry.url=" + f.registryURL + "\n" +
			"audit.enable=false\n" +
			"output.uri=" + outputURI + "\n" +
			"topics=" + topics + "\n"
		p := filepath.Join(f.dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	conf := write("readme.properties", "file://"+out+"    # where the files go", "views|clicks   # a regular expression")
	res := runCLI(t, time.Minute, "", "loader", "run", "--config", conf)
	if res.err == nil || !strings.Contains(res.err.Error(), "output.uri=") || !strings.Contains(res.err.Error(), "ends in what looks like a comment") {
		t.Errorf("output.uri with a comment: %v, want an error naming output.uri", res.err)
	}
	for _, want := range []string{"line=6 key=output.uri", "line=7 key=topics"} {
		if !strings.Contains(res.stderr, want) || !strings.Contains(res.stderr, "looks like it ends in a comment") {
			t.Errorf("stderr %q: want a warning with %q", res.stderr, want)
		}
	}
	if _, err := os.Stat(out + "    "); !os.IsNotExist(err) {
		t.Errorf("the output went to %q: %v", out+"    ", err)
	}
	conf = write("fragment.properties", "file://"+out+"#x", "clicks")
	if res := runCLI(t, time.Minute, "", "loader", "run", "--config", conf); res.err == nil || !strings.Contains(res.err.Error(), "output.uri=") ||
		!strings.Contains(res.err.Error(), "no #fragment") {
		t.Errorf("output.uri with a fragment: %v", res.err)
	}

	// The comment left on topics: warned about, and here it matches
	// nothing ("views|clicks   # ..." would match views alone: the
	// warning is what tells).
	conf = write("topics.properties", "file://"+out, "clicks   # the clicks topic")
	res = runCLI(t, time.Minute, "", "loader", "run", "--config", conf)
	if res.err == nil || !strings.Contains(res.err.Error(), `topics="clicks   # the clicks topic"`) ||
		!strings.Contains(res.err.Error(), "matches no topic") || !strings.Contains(res.err.Error(), "the cluster has clicks, views") {
		t.Errorf("topics matching nothing: %v, want an error naming the expression and the topics", res.err)
	}
	if !strings.Contains(res.stderr, "line=7 key=topics") {
		t.Errorf("stderr %q: want the warning about topics", res.stderr)
	}
	conf = write("typo.properties", "file://"+out, "clikcs")
	if res := runCLI(t, time.Minute, "", "loader", "run", "--config", conf); res.err == nil || !strings.Contains(res.err.Error(), `topics="clikcs"`) {
		t.Errorf("a mistyped topic: %v", res.err)
	}
	conf = write("good.properties", "file://"+out, "views|clicks")
	if res := mustRun(t, "", "loader", "run", "--config", conf); strings.Contains(res.stderr, "comment") {
		t.Errorf("a clean file warned: %s", res.stderr)
	}
}
