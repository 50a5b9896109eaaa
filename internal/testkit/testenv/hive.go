package testenv

import (
	"bytes"
	"context"
	"encoding/json"

	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// EnvHiveMetastore holds thrift://host:port of a real Hive Metastore (the
// standalone metastore 3.1.3 of testing/hive-metastore, started by
// scripts/with-servers.sh).
const EnvHiveMetastore = "TRIBUTARY_TEST_HIVE_METASTORE"

// HiveMetastore returns the thrift:// URI of the shared test metastore or
// fails t. Tests share it: each uses a database of its own.
func HiveMetastore(t testing.TB) string {
	t.Helper()
	uri := os.Getenv(EnvHiveMetastore)
	if uri == "" {
		t.Fatalf("no Hive Metastore: %s is unset; run the tests through `make test` "+
			"(it starts one with testing/hive-metastore/start.sh)", EnvHiveMetastore)
	}
	return uri
}

// OwnMetastore is a Hive Metastore of one test (StartHiveMetastore), which
// the test may stop and start again: its Derby database survives a stop.
type OwnMetastore struct {
	URI  string // thrift://127.0.0.1:PORT
	dir  string
	port int
	root string
}

// StartHiveMetastore starts a metastore of t's own on a free loopback
// port, its database in a temp dir and its warehouse at warehouse (a URI;
// "" means a local directory), and stops it when t ends. About 10 s and
// 200 MB: use HiveMetastore unless the test stops the metastore.
func StartHiveMetastore(t testing.TB, warehouse string) *OwnMetastore {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir, err := os.MkdirTemp("", "tributary-hms-")
	if err != nil {
		t.Fatal(err)
	}
	m := &OwnMetastore{URI: "thrift://127.0.0.1:" + strconv.Itoa(port), dir: dir, port: port, root: RepoRoot(t)}
	if warehouse == "" {
		warehouse = "file://" + filepath.Join(dir, "warehouse")
	}
	t.Cleanup(func() {
		m.Stop(t)
		if t.Failed() {
			t.Logf("own metastore's files kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	m.start(t, warehouse)
	return m
}

func (m *OwnMetastore) start(t testing.TB, warehouse string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(m.root, "testing/hive-metastore/start.sh"), strconv.Itoa(m.port), m.dir)
	cmd.Env = append(os.Environ(), "TRIBUTARY_HMS_WAREHOUSE="+warehouse)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("start a Hive Metastore on %s: %v\n%s", m.URI, err, stderr.String())
	}
	os.WriteFile(filepath.Join(m.dir, "warehouse.uri"), []byte(warehouse), 0o644)
}

// Start starts the stopped metastore again, with the same database.
func (m *OwnMetastore) Start(t testing.TB) {
	t.Helper()
	warehouse, err := os.ReadFile(filepath.Join(m.dir, "warehouse.uri"))
	if err != nil {
		t.Fatal(err)
	}
	m.start(t, string(warehouse))
}

// Stop stops the metastore (SIGTERM, then SIGKILL) and waits until it is gone.
func (m *OwnMetastore) Stop(t testing.TB) {
	t.Helper()
	out, err := exec.Command("bash", filepath.Join(m.root, "testing/hive-metastore/stop.sh"), m.dir).CombinedOutput()
	if err != nil {
		t.Errorf("stop the Hive Metastore on %s: %v\n%s", m.URI, err, out)
	}
}

// sparkSession starts a local Spark session with Hive support against
// the metastore of argv[1] (its Derby and warehouse dirs under argv[2]) as
// spark, and reads the JSON on stdin as inp; a script after it sets out,
// printed as one line "ROWS <json>".
const sparkSession = `
import json, os, sys
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
from pyspark.sql import SparkSession
inp = json.load(sys.stdin)
spark = (SparkSession.builder.master("local[2]").appName("tributary-test")
    .config("spark.hadoop.hive.metastore.uris", sys.argv[1])
    .config("spark.sql.warehouse.dir", "file://" + sys.argv[2])
    .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
    .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "768m")
    .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dderby.system.home=" + sys.argv[2])
    .enableHiveSupport().getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
`

// sparkScript runs the queries given as a JSON list on stdin, in order,
// and prints, per query, its rows as objects.
const sparkScript = `
out = []
for q in inp:
    out.append([r.asDict(recursive=True) for r in spark.sql(q).collect()])
spark.stop()
print("ROWS " + json.dumps(out, default=str))
`

// SparkSQL runs the queries, in order, in one PySpark session (Spark 3.5
// from PyPI in the TRIBUTARY_TEST_PYTHON virtualenv, enableHiveSupport()
// against the metastore at uri) and returns each query's rows, as JSON
// objects (numbers as float64, other values as strings). One session
// costs 15-30 s: batch the queries of a test. Fails t on any error.
func SparkSQL(t testing.TB, uri string, queries ...string) [][]map[string]any {
	t.Helper()
	var out [][]map[string]any
	SparkScript(t, Python(t), uri, sparkScript, queries, &out)
	if len(out) != len(queries) {
		t.Fatalf("spark: %d results for %d queries", len(out), len(queries))
	}
	return out
}

// SparkScript runs script with the PySpark of the interpreter py (Python
// or Spark4Python) in a session with Hive support against the metastore at
// uri: the script finds the session as spark and input (as JSON) as inp,
// and prints "ROWS " and its result as JSON, decoded into output. One JVM
// start; fails t on any error.
func SparkScript(t testing.TB, py, uri, script string, input, output any) {
	t.Helper()
	runPythonWith(t, py, "pyspark", sparkSession+script, input, output, uri, t.TempDir())
}

// EnvSpark4Python names a Python interpreter with PySpark 4.1
// (.cache/venv-spark4, made by scripts/install-deps.sh).
const EnvSpark4Python = "TRIBUTARY_TEST_SPARK4_PYTHON"

// Spark4Python returns the interpreter of EnvSpark4Python or fails t.
func Spark4Python(t testing.TB) string {
	t.Helper()
	py := os.Getenv(EnvSpark4Python)
	if py == "" {
		t.Fatalf("no Python with PySpark 4.1: %s is unset; run the tests through `make test` "+
			"(scripts/install-deps.sh makes .cache/venv-spark4)", EnvSpark4Python)
	}
	return py
}

const duckdbScript = `
import json, sys, duckdb
out = []
for q in json.load(sys.stdin):
    cur = duckdb.sql(q)
    cols = [c for c in cur.columns]
    out.append([dict(zip(cols, r)) for r in cur.fetchall()])
print("ROWS " + json.dumps(out, default=str))
`

// DuckDB runs the queries in DuckDB (the duckdb package of the
// TRIBUTARY_TEST_PYTHON virtualenv) and returns each one's rows as JSON
// objects. DuckDB reads local files: copy what it should read off HDFS.
func DuckDB(t testing.TB, queries ...string) [][]map[string]any {
	t.Helper()
	var out [][]map[string]any
	runPython(t, "duckdb", duckdbScript, queries, &out)
	return out
}

func runPython(t testing.TB, module, script string, input, output any, args ...string) {
	t.Helper()
	runPythonWith(t, Python(t), module, script, input, output, args...)
}

// PythonScript runs script with the TRIBUTARY_TEST_PYTHON interpreter
// (fastavro, pyarrow, duckdb), input as JSON on stdin, args as argv[1:];
// the script prints "ROWS " and its result as JSON, decoded into output.
func PythonScript(t testing.TB, script string, input, output any, args ...string) {
	t.Helper()
	runPython(t, "json", script, input, output, args...)
}

func runPythonWith(t testing.TB, py, module, script string, input, output any, args ...string) {
	t.Helper()
	if err := exec.Command(py, "-c", "import "+module).Run(); err != nil {
		t.Fatalf("%s cannot import %s: run `make deps` (scripts/install-deps.sh installs it into the virtualenv)", py, module)
	}
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := PythonCommand(ctx, py, append([]string{"-c", script}, args...)...)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	for _, line := range strings.Split(stdout.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "ROWS "); ok && err == nil {
			if err := json.Unmarshal([]byte(rest), output); err != nil {
				t.Fatalf("%s: bad output: %v", module, err)
			}
			return
		}
	}
	tail := stderr.String()
	if len(tail) > 6000 {
		tail = tail[len(tail)-6000:]
	}
	t.Fatalf("%s: %v\nstdout: %s\nstderr (tail): %s", module, err, stdout.String(), tail)
}

// PythonCommand returns the command running the interpreter py with args,
// with JAVA_HOME set to an OpenJDK 17 when one is found (PySpark starts its
// JVM from it): the one way the readers start Python, for the runners here
// and for long-lived sessions elsewhere (internal/testkit/icereader).
func PythonCommand(ctx context.Context, py string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, py, args...)
	if java := java17(); java != "" {
		cmd.Env = append(os.Environ(), "JAVA_HOME="+filepath.Dir(filepath.Dir(java)))
	}
	return cmd
}

// java17 returns TRIBUTARY_JAVA or an OpenJDK 17 under /usr/lib/jvm (Spark
// 3.5 and Hadoop 3.3 do not run on the newest JDKs), "" if neither exists.
func java17() string {
	if j := os.Getenv("TRIBUTARY_JAVA"); j != "" {
		return j
	}
	for _, pattern := range []string{"/usr/lib/jvm/java-17-openjdk-*/bin/java", "/usr/lib/jvm/*-17-*/bin/java"} {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return m[0]
		}
	}
	return ""
}
