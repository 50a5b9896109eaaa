package kafkacompat

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/pki"
	"github.com/tributary/tributary/internal/testkit/proccluster"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// TestMain removes the tributary binary the brokers run.
func TestMain(m *testing.M) { os.Exit(testproc.Main(m)) }

// waitTimeout bounds every wait for brokers or tools to converge: generous,
// since the machine running `make test` is small and shared.
const waitTimeout = 60 * time.Second

// cluster is a set of `tributary broker` processes with ids 1..n in one
// fresh ZooKeeper chroot (proccluster), each with a second, TLS listener.
type cluster struct {
	*proccluster.Cluster
	// zkServers is the ZooKeeper host:port list, without chroot.
	zkServers string
	// chroot is the cluster's ZooKeeper root, e.g. "/kafkacompat-0123abcd".
	chroot string
}

// startCluster starts n brokers and waits until each has joined.
func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	return startClusterWith(t, n, nil)
}

// startClusterWith is startCluster with extra broker properties.
func startClusterWith(t *testing.T, n int, extra map[string]string) *cluster {
	t.Helper()
	servers := testenv.ZooKeeper(t)
	connect := zktest.Chroot(t, servers, "kafkacompat")
	// A second, named TLS listener: the registrations Kafka 2.8's tools
	// read carry a named endpoint and listener_security_protocol_map.
	keystore := filepath.Join(t.TempDir(), "broker.pem")
	ca, err := pki.NewCA("kafkacompat-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(pki.Options{CommonName: "broker", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.WritePEM(keystore); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:SSL",
		"ssl.keystore.location":          keystore,
		"zookeeper.session.timeout.ms":   "6000",
	}
	maps.Copy(props, extra)
	pc := proccluster.New(t, proccluster.ZooKeeperConnect(connect), proccluster.Brokers(n),
		proccluster.Listener("EXTERNAL"), proccluster.Properties(props))
	return &cluster{Cluster: pc, zkServers: servers, chroot: strings.TrimPrefix(connect, servers)}
}

// brokerLines returns the distinct lines of the brokers' output that
// contain s, without their timestamps, each with its count.
func (c *cluster) brokerLines(s string) string {
	seen := map[string]int{}
	var order []string
	for id := int32(1); id <= int32(c.N()); id++ {
		p := c.Proc(id)
		if p == nil {
			continue
		}
		for _, line := range strings.Split(p.Output(), "\n") {
			if !strings.Contains(line, s) {
				continue
			}
			if _, rest, ok := strings.Cut(line, " "); ok && strings.HasPrefix(line, "time=") {
				line = rest
			}
			line, _, _ = strings.Cut(line, " repeated=")
			key := fmt.Sprintf("broker %d: %s", id, line)
			if seen[key] == 0 {
				order = append(order, key)
			}
			seen[key]++
		}
	}
	if len(order) == 0 {
		return "(none)"
	}
	var out []string
	for _, k := range order {
		out = append(out, fmt.Sprintf("%dx %s", seen[k], k))
	}
	return strings.Join(out, "\n")
}

// client returns a franz-go client on the whole cluster, closed when t ends.
func (c *cluster) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(c.Addrs()...),
		kgo.RetryTimeout(30 * time.Second),
		kgo.MetadataMinAge(100 * time.Millisecond),
	}, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// endOffsets returns each partition's end offset (ListOffsets latest, as
// kadm sends it).
func endOffsets(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) map[int32]int64 {
	t.Helper()
	lo, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	out := map[int32]int64{}
	var bad error
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && bad == nil {
			bad = fmt.Errorf("partition %d: %w", o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	if bad != nil {
		t.Fatalf("list end offsets of %s: %v", topic, bad)
	}
	return out
}
