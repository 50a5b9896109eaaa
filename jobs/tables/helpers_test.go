package tables

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	hms "github.com/beltran/gohive/hive_metastore"
	"github.com/linkedin/goavro/v2"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/registrytest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/jobs/compact"
)

// testRegistry is a real schema registry (this repository's, in memory)
// behind its REST API, and a client of it.
type testRegistry struct {
	url    string
	client *serde.RegistryClient
}

func newTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	url := registrytest.Serve(t)
	c, err := serde.NewRegistryClient(serde.ClientConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	return &testRegistry{url: url, client: c}
}

func (r *testRegistry) register(t *testing.T, subject, schema string) int {
	t.Helper()
	id, err := r.client.Register(context.Background(), subject, schema)
	if err != nil {
		t.Fatalf("register %s: %v", subject, err)
	}
	return id
}

// setCompatibility sets a subject's level (PUT /config/{subject}).
func (r *testRegistry) setCompatibility(t *testing.T, subject, level string) {
	registrytest.SetCompatibility(t, r.url, subject, level)
}

// randomName returns prefix and 8 random hex digits: a database or
// directory of one test on the shared servers.
func randomName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// openHDFS returns the test HDFS, a fresh base directory on it (removed
// when t ends) and the hdfs:// URI prefix of its paths.
func openHDFS(t *testing.T) (fsys filesys.FS, base, uri string) {
	t.Helper()
	uri = "hdfs://" + testenv.HDFS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fsys, base, err := filesys.Open(ctx, uri+"/"+randomName("jobs-tables-test-"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = fsys.RemoveAll(base)
		fsys.Close()
	})
	return fsys, base, uri
}

// writeLoaderFile writes records as one loader file (an Avro object
// container, named as hours names the loader's files) into the hour
// of topic that starts at hour.
func writeLoaderFile(t *testing.T, fsys filesys.FS, base, topic string, hour time.Time, partition int32, first int64,
	schemaID int, schema string, records []map[string]any) {
	t.Helper()
	codec, err := goavro.NewCodec(schema)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := goavro.NewOCFWriter(goavro.OCFConfig{W: &buf, Codec: codec, CompressionName: goavro.CompressionDeflateLabel})
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]any, len(records))
	for i, r := range records {
		recs[i] = r
	}
	if err := w.Append(recs); err != nil {
		t.Fatal(err)
	}
	name := hours.LoaderFile{Topic: topic, Partition: partition, First: first, Last: first + int64(len(records)) - 1,
		SchemaID: uint32(schemaID), Format: hours.Avro}.Name()
	if err := filesys.WriteFile(fsys, path.Join(hours.Dir(base, topic, hour), name), buf.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// compactThrough runs jobs/compact over topic with every hour that ends at
// or before through closed (no audit: a closed hour is ready at once), its
// table catalog cat.
func compactThrough(t *testing.T, fsys filesys.FS, base, topic string, through time.Time, cat hours.Catalog) compact.Summary {
	t.Helper()
	c, err := compact.New(compact.Config{FS: fsys, Base: base, Topics: []string{topic}, Delay: time.Nanosecond, Catalog: cat,
		ClosedThrough: func(context.Context) (time.Time, error) { return through.Add(time.Nanosecond), nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := c.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// hourPartition returns the wanted Partition of an hour as hours's
// reader rule finds its data: the directory of its data files and their
// format (all of one format, or the test fails).
func hourPartition(t *testing.T, fsys filesys.FS, base, uri, topic string, hour time.Time, schemaID int) Partition {
	t.Helper()
	data, err := hours.HourData(fsys, hours.Hour{Topic: topic, Start: hour, Dir: hours.Dir(base, topic, hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		t.Fatalf("hour %v of %s has no data", hour, topic)
	}
	dir, format := path.Dir(data[0].Path()), data[0].Format
	for _, d := range data {
		if path.Dir(d.Path()) != dir || d.Format != format {
			t.Fatalf("hour %v: data in %s (%s) and %s (%s): not one partition location", hour, dir, format, d.Path(), d.Format)
		}
	}
	return Partition{Topic: topic, Start: hour, Duration: time.Hour, Location: uri + dir, Format: string(format), SchemaID: schemaID}
}

func newTestMetastore(t *testing.T, uri, db, fileSystem string, reg *testRegistry, opts Options) *Metastore {
	t.Helper()
	m, err := New(Config{URIs: []string{uri}, Database: db, DialTimeout: 3 * time.Second, FileSystem: fileSystem}, reg.client, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func syncOK(t *testing.T, m *Metastore, topic string, want []Partition) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := m.Sync(ctx, topic, want); err != nil {
		t.Fatalf("sync %s: %v", topic, err)
	}
}

// call runs fn on m's connection, failing t on an error.
func call(t *testing.T, m *Metastore, fn func(context.Context, *hms.ThriftHiveMetastoreClient) error) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := m.conn.get(ctx)
	if err == nil {
		err = m.conn.check(fn(ctx, cl))
	}
	if err != nil {
		t.Fatal(err)
	}
}

// registered lists the table's partitions as the metastore has them:
// value -> serde class, location and column names.
func registered(t *testing.T, m *Metastore, topic string) map[string]string {
	t.Helper()
	var parts []*hms.Partition
	call(t, m, func(ctx context.Context, cl *hms.ThriftHiveMetastoreClient) (err error) {
		parts, err = cl.GetPartitions(ctx, m.cfg.Database, m.cfg.Table(topic), -1)
		return err
	})
	out := map[string]string{}
	for _, p := range parts {
		var cols []string
		for _, c := range p.Sd.Cols {
			cols = append(cols, c.Name)
		}
		key := strings.Join(p.Values, "/")
		if _, dup := out[key]; dup {
			t.Fatalf("partition %s registered twice", key)
		}
		out[key] = fmt.Sprintf("%s %s %s", p.Sd.SerdeInfo.SerializationLib[strings.LastIndex(p.Sd.SerdeInfo.SerializationLib, ".")+1:], p.Sd.Location, strings.Join(cols, ","))
	}
	return out
}

// tableColumns returns the table's columns as "name type".
func tableColumns(t *testing.T, m *Metastore, topic string) []string {
	t.Helper()
	var res *hms.GetTableResult_
	call(t, m, func(ctx context.Context, cl *hms.ThriftHiveMetastoreClient) (err error) {
		res, err = cl.GetTableReq(ctx, &hms.GetTableRequest{DbName: m.cfg.Database, TblName: m.cfg.Table(topic)})
		return err
	})
	var out []string
	for _, c := range res.Table.Sd.Cols {
		out = append(out, c.Name+" "+c.Type)
	}
	return out
}
