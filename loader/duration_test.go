package loader_test

import (
	"context"
	"errors"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/loader"
)

// TestPartitionDuration loads 30 minutes of records with
// partition.duration.ms=5m on each file system: every record lands once,
// in the <HH>/<mm> partition of its timestamp, hours.List reads six
// 5-minute partitions, and a loader with another duration for the topic
// refuses to start, naming the key.
func TestPartitionDuration(t *testing.T) {
	c := newCluster(t)
	d := dataset{topic: "clicks", n: 3000, partitions: 3, start: hourStart().Add(45 * time.Minute), span: 30 * time.Minute}
	c.CreateTopic(t, d.topic, d.partitions)
	c.produceDataset(t, d)
	for _, fc := range fileSystems {
		t.Run(fc.name, func(t *testing.T) {
			fsys, base, uri := fc.open(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			props := map[string]string{"name": "five-" + fc.name, "bootstrap.servers": c.Addr(),
				"schema.registry.url": c.registry, "topics": "clicks", "output.uri": uri,
				"partition.duration.ms": "300000", "audit.enable": "false"}
			cfg, _, err := loader.ConfigFromProperties(props)
			if err != nil {
				t.Fatal(err)
			}
			l, err := loader.New(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			sum, err := l.Run(ctx)
			l.Close()
			if err != nil || sum.Records != int64(d.n) {
				t.Fatalf("run %+v, %v", sum, err)
			}
			got := readAll(t, fsys, base)
			if len(got) != d.n {
				t.Fatalf("%d distinct records landed, want %d", len(got), d.n)
			}
			for i := 0; i < d.n; i++ {
				l := got[int64(i)]
				want := strings.TrimPrefix(hours.DirFor("", d.topic, d.ts(i), 5*time.Minute), "/")
				if len(l) != 1 || path.Dir(l[0].file) != want || l[0].rec["page"] != page(i) {
					t.Fatalf("record %d landed as %+v, want once in %s", i, l, want)
				}
			}
			list, err := hours.List(fsys, base, d.topic)
			if err != nil || len(list) != 6 {
				t.Fatalf("partitions %+v, %v: want 6", list, err)
			}
			for i, h := range list {
				if !h.Start.Equal(d.start.Add(time.Duration(i)*5*time.Minute)) || h.Len() != 5*time.Minute {
					t.Fatalf("partition %d: %+v", i, h)
				}
			}
			if list[3].String() != "clicks/2026/03/14/10/00" {
				t.Fatalf("partition 3 is %s", list[3])
			}
			props["partition.duration.ms"] = "600000"
			cfg, _, _ = loader.ConfigFromProperties(props)
			l, err = loader.New(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = l.Run(ctx)
			l.Close()
			if !errors.Is(err, loader.ErrInvalidConfig) || !strings.Contains(err.Error(), "partition.duration.ms") {
				t.Fatalf("another duration for the topic: %v, want a configuration error naming partition.duration.ms", err)
			}
		})
	}
	if _, _, err := loader.ConfigFromProperties(map[string]string{"name": "x", "bootstrap.servers": "h:1",
		"schema.registry.url": "http://r", "topics": "t", "output.uri": "/o", "partition.duration.ms": "420000"}); err == nil ||
		!strings.Contains(err.Error(), "partition.duration.ms") {
		t.Fatalf("a 7-minute duration: %v, want an error naming partition.duration.ms", err)
	}
}
