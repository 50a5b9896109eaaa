package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Environment variables set by scripts/with-servers.sh.
const (
	// EnvZooKeeper holds host:port of a standalone ZooKeeper server.
	EnvZooKeeper = "TRIBUTARY_TEST_ZK"
	// EnvZooKeeperEnsemble holds a comma list of the three ensemble members.
	EnvZooKeeperEnsemble = "TRIBUTARY_TEST_ZK_ENSEMBLE"
	// EnvZooKeeperEnsembleControl names a script taking "stop N" / "start N"
	// to stop and restart ensemble member N (1..3), for failure tests.
	EnvZooKeeperEnsembleControl = "TRIBUTARY_TEST_ZK_ENSEMBLE_CTL"
)

// ZooKeeper returns the address of the standalone test ZooKeeper or fails t.
func ZooKeeper(t testing.TB) string {
	t.Helper()
	addr := os.Getenv(EnvZooKeeper)
	if addr == "" {
		t.Fatalf("ZooKeeper is not running: %s is unset; run the tests through `make test` "+
			"(or start one with `bash scripts/zk.sh start` and export what it prints)", EnvZooKeeper)
	}
	return addr
}

// ZooKeeperEnsemble returns the addresses of the 3-node test ensemble and the
// control script for stopping/starting members, or fails t.
func ZooKeeperEnsemble(t testing.TB) (addrs []string, control string) {
	t.Helper()
	list := os.Getenv(EnvZooKeeperEnsemble)
	control = os.Getenv(EnvZooKeeperEnsembleControl)
	if list == "" || control == "" {
		t.Fatalf("ZooKeeper ensemble is not running: %s/%s unset; run the tests through `make test`",
			EnvZooKeeperEnsemble, EnvZooKeeperEnsembleControl)
	}
	return strings.Split(list, ","), control
}

// Kcat returns the path of the kcat binary or fails t.
func Kcat(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat not found on PATH: run `make deps` (installs the Debian package kcat)")
	}
	return path
}
