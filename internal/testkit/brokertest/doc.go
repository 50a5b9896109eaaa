// Package brokertest is the one test fixture for Tributary brokers: a
// standalone broker (New) or a cluster of brokers on one coordination
// service (NewCluster), running in the test's process.
//
// # Shape
//
// Both follow the house shape of a test helper: they call t.Helper, keep
// each broker's data under t.TempDir() (broker i in <dir>/broker-<i>),
// listen on 127.0.0.1:0, and register t.Cleanup to close every broker.
// They return once every broker accepts clients and, on a shared
// coordination service, every broker's metadata lists all of them. Each
// wait is bounded (StartTimeout, SettleTimeout) and fails the test naming
// what did not happen; CreateTopic likewise returns once every broker
// agrees on the new topic's leaders and the leaders serve it. Logs go to
// the test log (testenv.Logger) unless Logger says otherwise.
//
// # Coordination
//
// New runs one broker in single-node mode (its own private coordinator),
// as `tributary broker` does without zookeeper.connect. NewCluster runs its
// brokers on one in-process memcoord server by default; ZooKeeper() puts
// them in a fresh chroot of the test ZooKeeper (TRIBUTARY_TEST_ZK, see
// testenv), ZooKeeperConnect on a chroot the test made, and Coordinator on
// a coordination service the test shares with its group members. Both
// constructors take the same options.
//
// # Faults
//
// Stop closes one broker gracefully; Restart starts it again on its data
// directory and its port. Clusters of separate processes and SIGKILLs are
// proccluster's (one tributary broker process each, on testproc), not this
// package's.
//
// # Concurrency
//
// A Cluster's accessors (Addr, Addrs, Broker, Connector, ...) are safe for
// concurrent use; Stop, Restart, CreateTopic and Client fail the test and
// so belong to the test's goroutine.
package brokertest
