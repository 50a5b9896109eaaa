package testenv

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// srvrMode asks the ZooKeeper server at addr for its Mode line ("standalone",
// "leader", "follower"); "" when it does not serve.
func srvrMode(t *testing.T, addr string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatalf("set deadline on %s: %v", addr, err)
	}
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return ""
	}
	scanner := bufio.NewScanner(conn)
	for scanner.Scan() {
		if mode, ok := strings.CutPrefix(scanner.Text(), "Mode: "); ok {
			return mode
		}
	}
	return ""
}

func TestZooKeeperStandaloneServes(t *testing.T) {
	addr := ZooKeeper(t)
	if mode := srvrMode(t, addr); mode != "standalone" {
		t.Fatalf("ZooKeeper at %s: mode %q, want standalone", addr, mode)
	}
}

// TestZooKeeperEnsembleServes checks the ensemble without taking members
// down: other packages' tests may be stopping one right now, so it asks
// for a quorum (two of three serving, exactly one leader), not all three.
func TestZooKeeperEnsembleServes(t *testing.T) {
	addrs, control := ZooKeeperEnsemble(t)
	if len(addrs) != 3 {
		t.Fatalf("ensemble %v: want 3 members", addrs)
	}
	serving, leaders := 0, 0
	for _, addr := range addrs {
		switch srvrMode(t, addr) {
		case "leader":
			leaders++
			serving++
		case "follower":
			serving++
		}
	}
	if serving < 2 || leaders != 1 {
		t.Fatalf("ensemble %v: %d serving, %d leaders; want a quorum with one leader", addrs, serving, leaders)
	}
	if _, err := exec.LookPath(control); err != nil {
		t.Fatalf("ensemble control %q is not executable: %v", control, err)
	}
}

func TestKcatRuns(t *testing.T) {
	out, err := exec.Command(Kcat(t), "-V").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "librdkafka") {
		t.Fatalf("kcat -V: %v\n%s", err, out)
	}
}

// TestKafka39ToolsRun runs Kafka 3.9's TopicCommand --version: the jars
// are where install-deps put them and the classpath is complete.
func TestKafka39ToolsRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Kafka39Tools(t).Command(ctx, "org.apache.kafka.tools.TopicCommand", "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "3.9.1") {
		t.Fatalf("TopicCommand --version: %v\n%s", err, out)
	}
}
