// Package proccluster is the one test fixture for a cluster of `tributary
// broker` processes on ZooKeeper: brokers with ids 1..n, each a child
// process (testproc) that a test can stop, SIGKILL, pause and start again
// on its data and its port. It is what broker/clustertest and
// broker/kafkacompat run their multi-process scenarios on; in-process
// brokers are brokertest's.
//
// # Shape
//
// New follows the house shape of a test helper: it calls t.Helper, keeps
// everything under one t.TempDir() (broker i's log.dirs in
// <dir>/broker-<i>, its properties file in <dir>/broker-<i>.properties)
// and registers a t.Cleanup that kills what still runs and, if the test
// failed, logs which brokers were down or paused. It returns once every
// broker listens; the wait is testproc's, bounded by
// testproc.ListenTimeout, and fails the test with the broker's output.
//
// # Properties
//
// Each Start writes the broker's properties file anew: broker.id,
// listeners (PLAINTEXT://127.0.0.1:<port>, then one 127.0.0.1:0 listener
// per Listener option), log.dirs, zookeeper.connect (a fresh chroot of the
// test ZooKeeper unless ZooKeeperConnect names one),
// zookeeper.session.timeout.ms (DefaultSessionTimeout, short, so that a
// killed broker's registration goes soon) and
// zookeeper.connection.timeout.ms=20000; then Properties, which may
// replace any of them but listeners. Overrides go on the command line as
// `--override key=value`. SessionTimeout reports the session the brokers
// were given.
//
// # Faults
//
// Stop is a controlled shutdown (SIGTERM, a clean exit expected within
// StopTimeout); Kill is a crash (SIGKILL), after which the broker stays
// registered until its session expires; Pause and Resume are SIGSTOP and
// SIGCONT. Start starts a broker that is down: the first time on free
// ports, later on the same ports, every listener's, so that clients
// seeded with Seeds reconnect to it and, right after a Kill, the broker
// knows the registration its killed session still holds as its own and
// waits for it to expire instead of refusing to start.
//
// # Processes
//
// A process belongs to the test whose t started it: testproc kills it when
// that test ends and logs its output if the test failed. The binary is
// built once per test binary, so a package using this calls testproc.Main
// from its TestMain.
//
// # Concurrency
//
// The accessors (Addr, Addrs, Live, Seeds, Proc, ...) are safe for
// concurrent use with each other and with Start, Stop, Kill, Pause and
// Resume; those fail the test and so belong to the test's goroutine.
package proccluster
