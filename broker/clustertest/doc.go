// Package clustertest holds the multi-broker tests of issue 4: brokers
// running as separate `tributary broker` processes on loopback and
// coordinated through a real ZooKeeper (standalone, and the 3-node
// ensemble for the ensemble-failure test), and the same scenarios against
// brokers of one process sharing an in-process memcoord server. It has no
// code outside its tests.
//
// The process tests build cmd/tributary once per run into a temporary
// directory and run their brokers through internal/testkit/proccluster
// (procCluster, replCluster and groupCluster are thin wrappers of it that
// add the properties their scenarios share). Every test uses its own ZooKeeper chroot, removed at the end,
// and short sessions (zookeeper.session.timeout.ms=4000) so that a killed
// broker's registration expires quickly. TestRestartRightAfterSIGKILL
// restarts a SIGKILLed broker process at once, on the same port, while its
// killed session still holds /brokers/ids/<id>.
//
// The replication tests (replication_test.go, issue 13) run three broker
// processes with RF=3 and min.insync.replicas=2 and SIGKILL, SIGSTOP,
// SIGCONT and SIGTERM them under load: leader kills (5 by default, 20 with
// TRIBUTARY_FULL=1), a paused follower leaving and rejoining the ISR, a
// cut-off leader truncating its divergent tail, and a rolling restart. A
// shared checker (replication_helpers_test.go) compares every acknowledged
// record and everything a consumer read with the final log.
// TestReplicationInProcess does the same kind of checks on in-process
// brokers under the race detector.
//
// The audit topic tests (audit_test.go) check that __audit, auto-created by
// an audit publisher, is replicated over three brokers and keeps a leader
// per partition and takes publishes with one broker SIGKILLed (ZooKeeper)
// or closed without a controlled shutdown (memcoord); that one broker gets
// it with one replica; and that audit.topic.* set its layout.
//
// TestACLsAcrossBrokers (acl_test.go) runs three in-process brokers on
// ZooKeeper with the authorizer on and checks that ACLs written through one
// broker's CreateAcls and by Kafka 2.8's kafka-acls (on ZooKeeper) bind every
// broker at once, and that Kafka's Java producer fails fast when denied.
//
// Only TestEnsembleMemberDown stops ZooKeeper ensemble members (and restarts
// them before it ends). internal/coord/zkcoord and broker/cluster have
// ensemble tests too: packages run in parallel under `go test ./...`, so two
// of them stopping different members at once would cost the ensemble its
// quorum. That is a known hazard of the suite.
package clustertest
