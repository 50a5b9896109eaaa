package proccluster

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

func TestMain(m *testing.M) { os.Exit(testproc.Main(m)) }

// TestFaultsKeepThePort: a broker killed, paused or stopped is reported so
// by the accessors, and started again it listens on its old port with the
// properties file the options describe.
func TestFaultsKeepThePort(t *testing.T) {
	c := New(t, Brokers(2), Listener("INTERNAL"),
		Properties(map[string]string{"num.partitions": "3", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"}),
		Overrides(map[string]string{"zookeeper.session.timeout.ms": "6000"}))
	if got := c.SessionTimeout(); got != 6*time.Second {
		t.Fatalf("SessionTimeout %v, want the override's 6s", got)
	}
	seeds := c.Seeds()
	if got := c.Addrs(); !slices.Equal(got, seeds) || len(got) != 2 {
		t.Fatalf("Addrs %v, Seeds %v: want the same two", got, seeds)
	}
	c.Kill(t, 2)
	if c.Proc(2) != nil || c.Addr(2) != "" || !slices.Equal(c.Live(), []int32{1}) || len(c.Addrs()) != 1 {
		t.Fatalf("after Kill: proc %v, addr %q, live %v, addrs %v", c.Proc(2), c.Addr(2), c.Live(), c.Addrs())
	}
	c.Start(t, 2) // waits out the killed session's registration
	if got := c.Addr(2); got != seeds[1] {
		t.Fatalf("restarted broker 2 on %s, want its old address %s", got, seeds[1])
	}
	if out := c.Proc(2).Output(); !strings.Contains(out, "waiting for that session to expire") {
		t.Errorf("restarted broker 2 did not wait for its stale registration:\n%s", out)
	}
	// Its properties file, written anew for the restart, names its ports.
	f, err := os.Open(c.PropertiesFile(2))
	if err != nil {
		t.Fatal(err)
	}
	props, err := properties.Read(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if props["broker.id"] != "2" || props["num.partitions"] != "3" || props["log.dirs"] != c.LogDir(2) ||
		props["zookeeper.connect"] != c.Connect() || !strings.HasPrefix(props["listeners"], "PLAINTEXT://"+seeds[1]+",INTERNAL://127.0.0.1:") || strings.HasSuffix(props["listeners"], ":0") {
		t.Fatalf("broker 2's properties: %v", props)
	}

	c.Pause(t, 1)
	if !slices.Equal(c.Live(), []int32{2}) || c.Addr(1) != seeds[0] {
		t.Fatalf("after Pause: live %v, addr %q", c.Live(), c.Addr(1))
	}
	c.Resume(t, 1)
	if !slices.Equal(c.Live(), []int32{1, 2}) {
		t.Fatalf("after Resume: live %v", c.Live())
	}

	took := c.Stop(t, 1)
	t.Logf("broker 1 stopped in %v", took.Round(time.Millisecond))
	if c.Addr(1) != "" || !slices.Equal(c.SeedsOf(1), seeds[:1]) {
		t.Fatalf("after Stop: addr %q, seed %v", c.Addr(1), c.SeedsOf(1))
	}
	c.Start(t, 1)
	if got := c.Addrs(); !slices.Equal(got, seeds) {
		t.Fatalf("after the restarts Addrs %v, want %v", got, seeds)
	}
}
