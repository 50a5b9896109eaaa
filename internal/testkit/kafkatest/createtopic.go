package kafkatest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// CreateTimeout bounds CreateTopic: the request and the wait for leaders.
const CreateTimeout = time.Minute

// CreateTopic creates topic through the Kafka API (CreateTopics with
// replication factor 1 and configs, which may be nil) on the cluster that
// seeds belong to, and returns the topic's metadata once every seed
// broker, asked alone, gives each partition a leader: brokers learn the
// partition states each in its own time. It fails t otherwise within
// CreateTimeout. For brokers of the test's own process, brokertest's
// CreateTopic waits on their state directly.
func CreateTopic(t testing.TB, seeds []string, topic string, partitions int32, configs map[string]*string) kadm.TopicDetail {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), CreateTimeout)
	defer cancel()
	cl, err := network.NewClient(network.ClientConfig{Brokers: seeds})
	if err != nil {
		t.Fatalf("kgo client: %v", err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	var td kadm.TopicDetail
	testenv.WaitFor(t, CreateTimeout, "a leader of every partition of "+topic+" on every broker", func() (bool, string) {
		for _, addr := range seeds {
			md, err := MetadataFrom(ctx, addr, topic)
			if err != nil {
				return false, fmt.Sprintf("metadata from %s: %v", addr, err)
			}
			td = md.Topics[topic]
			if td.Err != nil || len(td.Partitions) != int(partitions) {
				return false, fmt.Sprintf("%s: %d of %d partitions (%v)", addr, len(td.Partitions), partitions, td.Err)
			}
			for _, p := range td.Partitions {
				if p.Leader < 0 {
					return false, fmt.Sprintf("%s: partition %d has no leader", addr, p.Partition)
				}
			}
		}
		return true, ""
	})
	return td
}

// MetadataFrom asks the broker at addr alone (not the cluster it seeds)
// for the metadata of topics.
func MetadataFrom(ctx context.Context, addr string, topics ...string) (kadm.Metadata, error) {
	cl, err := network.NewClient(network.ClientConfig{Brokers: []string{addr}})
	if err != nil {
		return kadm.Metadata{}, err
	}
	defer cl.Close()
	return kadm.NewClient(cl).Metadata(ctx, topics...)
}
