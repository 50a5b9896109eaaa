package mirror

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// TestMirrorRecordTooLarge: a record larger than the target topic's
// max.message.bytes stops its source partition with an error naming topic,
// partition and offset; the records before it arrive, none after it, the
// other partition is mirrored whole, and the partition's committed offset
// stays at the refused record.
func TestMirrorRecordTooLarge(t *testing.T) {
	dc1, target := newCluster(t, "dc1"), newCluster(t, "analytics")
	dc1.CreateTopicWithConfigs(t, "t", 2, nil)
	target.CreateTopicWithConfigs(t, "t", 2, map[string]string{"max.message.bytes": "10000"})
	want := newProduced()
	cl := dc1.Client(t)
	want.produce(t, cl, "dc1", "t", 2, 0, 50)
	big := &kgo.Record{Topic: "t", Key: []byte("big"), Value: bytes.Repeat([]byte{'x'}, 20_000)}
	if err := cl.ProduceSync(testenv.Context(t, 30*time.Second), big).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want.produce(t, cl, "dc1", "t", 2, 50, 50)
	watcher := watchCommits(t, dc1.ZooKeeper(), "mirror-big", "t", 2)

	var logs testproc.SyncBuffer
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(&logs, testenv.LogWriter(t)), &slog.HandlerOptions{Level: slog.LevelInfo}))
	stop := runMirror(t, Config{
		Sources:          []SourceConfig{zkSource(dc1)},
		TargetBrokers:    []string{target.Addr()},
		Topics:           "t",
		GroupID:          "mirror-big",
		CommitInterval:   200 * time.Millisecond,
		RebalanceBackoff: 200 * time.Millisecond,
		AuditDisable:     true,
		Logger:           logger,
	}, nil)
	reader := readTarget(t, target, "t")
	wantMsg := fmt.Sprintf("source dc1 topic t partition %d offset %d", big.Partition, big.Offset)
	other := 1 - big.Partition
	testenv.WaitFor(t, time.Minute, "partition 1 mirrored and partition 0 stopped", func() (bool, string) {
		reader.mu.Lock()
		n1, n0 := len(reader.byPart[other]), len(reader.byPart[big.Partition])
		reader.mu.Unlock()
		return n1 == int(want.perPart[srcPos{"dc1", other, 0}]) && n0 == int(big.Offset) && strings.Contains(logs.String(), wantMsg),
			fmt.Sprintf("refusing partition: %d, other: %d records", n0, n1)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the refusing partition committed up to the refused record", func() (bool, string) {
		got := watcher.committed()[big.Partition]
		return got == big.Offset, fmt.Sprintf("committed %d, want %d", got, big.Offset)
	})
	if !strings.Contains(logs.String(), "partition stopped") {
		t.Errorf("no 'partition stopped' error logged")
	}
	reader.mu.Lock()
	defer reader.mu.Unlock()
	for i, r := range reader.byPart[big.Partition] {
		o, err := recordOrigin(r)
		if err != nil || o.offset != int64(i) {
			t.Fatalf("refusing partition's record %d has origin %v (%v)", i, o, err)
		}
	}
}

// TestMirrorCommandBadConfig: `tributary mirror` exits non-zero with an
// error naming the bad key.
func TestMirrorCommandBadConfig(t *testing.T) {
	dir := t.TempDir()
	for key, props := range map[string]map[string]string{
		"topics": {"source.dc1.bootstrap.servers": "127.0.0.1:1", "target.bootstrap.servers": "127.0.0.1:2",
			"group.id": "g", "topics": "a(b"},
		"target.bootstrap.servers": {"source.dc1.bootstrap.servers": "127.0.0.1:1", "group.id": "g", "topics": "a"},
		"buffer.memory": {"source.dc1.bootstrap.servers": "127.0.0.1:1", "target.bootstrap.servers": "127.0.0.1:2",
			"group.id": "g", "topics": "a", "buffer.memory": "lots"},
	} {
		path := testproc.WriteProperties(t, dir, key+".properties", props)
		out, err := exec.Command(testproc.Binary(t), "mirror", "--config", path).CombinedOutput()
		if err == nil || !strings.Contains(string(out), key) {
			t.Errorf("%s: exit %v, output %q: want a failure naming %s", key, err, out, key)
		}
	}
	out, err := exec.Command(testproc.Binary(t), "mirror", "--config", filepath.Join(dir, "missing")).CombinedOutput()
	if err == nil {
		t.Errorf("missing config file: exit 0, output %q", out)
	}
}
