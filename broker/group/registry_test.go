package group

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// TestZooKeeperRegistry runs one body against ZooKeeper and memcoord:
// offsets land at /consumers/<group>/offsets/<topic>/<p> as decimal
// strings (what the client package and Kafka 0.8 tools read), load back
// for the owned groups only, and are removed by partition or whole.
func TestZooKeeperRegistry(t *testing.T) {
	for _, backend := range []struct {
		name    string
		connect func(t *testing.T) func(context.Context) (coord.Session, error)
	}{
		{"zookeeper", func(t *testing.T) func(context.Context) (coord.Session, error) {
			connect := zktest.Chroot(t, testenv.ZooKeeper(t), "group-registry")
			return func(ctx context.Context) (coord.Session, error) {
				return zkcoord.Connect(ctx, connect, zkcoord.Config{SessionTimeout: 10 * time.Second, ConnectionTimeout: 20 * time.Second})
			}
		}},
		{"memcoord", func(t *testing.T) func(context.Context) (coord.Session, error) {
			srv := memcoord.NewServer()
			return func(context.Context) (coord.Session, error) { return srv.Connect(memcoord.Config{}), nil }
		}},
	} {
		t.Run(backend.name, func(t *testing.T) {
			connect := backend.connect(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := NewZooKeeperRegistry(connect)
			t.Cleanup(func() { _ = r.Close() })
			offs := func(pairs ...int64) []RegistryOffset {
				var out []RegistryOffset
				for i := 0; i < len(pairs); i += 2 {
					out = append(out, RegistryOffset{TopicPartition: TopicPartition{"t", int32(pairs[i])}, Offset: pairs[i+1]})
				}
				return out
			}
			if err := r.Store(ctx, "g1", offs(0, 10, 1, 20)); err != nil {
				t.Fatal(err)
			}
			if err := r.Store(ctx, "g1", offs(0, 11)); err != nil { // the nodes exist now: one multi-op
				t.Fatal(err)
			}
			if err := r.Store(ctx, "g2", offs(3, 30)); err != nil {
				t.Fatal(err)
			}
			if err := r.Store(ctx, "bad/name", offs(0, 1)); err != nil {
				t.Fatalf("a group name ZooKeeper cannot hold is skipped, not an error: %v", err)
			}
			s, err := connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			data, st, err := s.Get(ctx, "/consumers/g1/offsets/t/0")
			if err != nil || string(data) != "11" || st.Modified.IsZero() {
				t.Fatalf("node holds %q (%v)", data, err)
			}
			got, err := r.Load(ctx, func(g string) bool { return g == "g1" })
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || len(got["g1"]) != 2 || fmt.Sprint(got["g1"][0].Offset, got["g1"][1].Offset) != "11 20" {
				t.Fatalf("loaded %+v", got)
			}
			if err := r.Remove(ctx, "g1", []TopicPartition{{"t", 0}}); err != nil {
				t.Fatal(err)
			}
			if ok, _, _ := s.Exists(ctx, "/consumers/g1/offsets/t/0"); ok {
				t.Fatal("removed offset still there")
			}
			if err := r.Remove(ctx, "g2", nil); err != nil {
				t.Fatal(err)
			}
			got, err = r.Load(ctx, func(string) bool { return true })
			if err != nil || len(got) != 1 || len(got["g1"]) != 1 || got["g1"][0].Partition != 1 {
				t.Fatalf("after removals loaded %+v (%v)", got, err)
			}
		})
	}
}
