// Package testproc runs Tributary's own binary as child processes in tests:
// it builds cmd/tributary once per test binary and starts `tributary
// broker` processes, waiting until each listens, so that crash tests can
// SIGKILL a real process and restart it on the same directories, and
// replication tests can pause one (SIGSTOP) and resume it (SIGCONT).
// RunCrashable runs any subcommand to its end and tells a crash-injection
// SIGKILL from a failure, for the crash tests of compaction and tables.
//
// A cluster of such brokers, with one properties file per broker id and
// restarts on the same ports, is internal/testkit/proccluster's.
//
// A test binary that uses it calls Main from its TestMain, which removes the
// built binary afterwards (MainParallel also raises -test.parallel's
// default, for packages whose parallel tests mostly wait). Every process started here is killed when its
// test ends, and its output is logged if the test failed. Safe for use from
// parallel tests.
package testproc
