package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// Environment variables for the independent readers and the browser, set by
// scripts/with-servers.sh (scripts/install-deps.sh installs what they name).
const (
	// EnvHDFS holds host:port of a real HDFS NameNode (a MiniDFSCluster
	// started from testing/hdfs by scripts/with-servers.sh).
	EnvHDFS = "TRIBUTARY_TEST_HDFS"
	// EnvPython names a Python interpreter that can import fastavro and
	// pyarrow: the independent Avro and Parquet readers of the tests.
	EnvPython = "TRIBUTARY_TEST_PYTHON"
	// EnvChromium names a Chromium binary that runs headless.
	EnvChromium = "TRIBUTARY_TEST_CHROMIUM"
)

// HDFS returns host:port of the test HDFS NameNode or fails t. Tests share
// one file system: each works under a directory of its own.
func HDFS(t testing.TB) string {
	t.Helper()
	addr := os.Getenv(EnvHDFS)
	if addr == "" {
		t.Fatalf("HDFS is not running: %s is unset; run the tests through `make test` "+
			"(it starts a MiniDFSCluster with testing/hdfs/start.sh)", EnvHDFS)
	}
	return addr
}

// Python returns a Python interpreter with fastavro and pyarrow, or fails t.
func Python(t testing.TB) string {
	t.Helper()
	py := os.Getenv(EnvPython)
	if py == "" {
		t.Fatalf("no Python with fastavro and pyarrow: %s is unset; run the tests through "+
			"`make test` (scripts/install-deps.sh makes the virtualenv)", EnvPython)
	}
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("%s=%s: %v; run `make deps`", EnvPython, py, err)
	}
	return py
}

// Chromium returns a headless-capable Chromium binary or fails t.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvChromium); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("Chromium not found: set %s or run `make deps` (installs the Debian package chromium)", EnvChromium)
	return ""
}
