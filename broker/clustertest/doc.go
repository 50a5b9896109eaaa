// Package clustertest holds the multi-broker tests of issue 4: brokers
// running as separate `tributary broker` processes on loopback and
// coordinated through a real ZooKeeper (standalone, and the 3-node
// ensemble for the ensemble-failure test), and the same scenarios against
// brokers of one process sharing an in-process memcoord server. It has no
// code outside its tests.
//
// The process tests build cmd/tributary once per run into a temporary
// directory. Every test uses its own ZooKeeper chroot, removed at the end,
// and short sessions (zookeeper.session.timeout.ms=4000) so that a killed
// broker's registration expires quickly. TestRestartRightAfterSIGKILL
// restarts a SIGKILLed broker process at once, on the same port, while its
// killed session still holds /brokers/ids/<id>.
//
// Only TestEnsembleMemberDown stops ZooKeeper ensemble members (and restarts
// them before it ends). internal/coord/zkcoord and broker/cluster have
// ensemble tests too: packages run in parallel under `go test ./...`, so two
// of them stopping different members at once would cost the ensemble its
// quorum. That is a known hazard of the suite.
package clustertest
