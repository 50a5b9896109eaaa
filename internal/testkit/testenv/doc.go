// Package testenv finds the real servers and programs that integration tests
// drive: ZooKeeper (a standalone server and a 3-node ensemble), HDFS (plain,
// and Kerberized with its KDC: SecureHDFS), a Hive Metastore (HiveMetastore,
// or one of the test's own that it may stop: StartHiveMetastore), kcat, and
// Apache Kafka; and the readers that check what the tests wrote: Spark SQL
// with Hive support (SparkSQL, several queries per Spark session) and
// DuckDB, from the TRIBUTARY_TEST_PYTHON virtualenv. `make test` starts the servers (scripts/with-servers.sh) and
// exports their addresses through the environment; this package reads them.
//
// A test that needs a server calls the matching helper, which fails the test
// with a message naming what is missing and how to get it. Nothing here skips
// silently: a missing server in CI is a failure, not a pass.
//
// The servers are shared by every test package of a run, and go test runs
// packages in parallel: tests use their own ZooKeeper chroot or paths, and a
// test that stops an ensemble member (ControlEnsemble) restarts it before it
// ends. Kafka is not started by `make test`; scripts/kafka.sh starts it for
// benchmarks and for interoperability tests run by hand (Kafka).
//
// Three helpers serve every test package: WaitFor, the one bounded wait, polls
// a condition with back-off and fails naming what it waited for and the
// last state seen; Context bounds a test's blocking calls; Logger (and
// LogWriter) log to the test's log and stop at its cleanup. They live here,
// in a package importing nothing of Tributary, so that the broker's internal
// tests can use them too.
package testenv
