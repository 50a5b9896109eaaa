// Package devcluster runs a whole Tributary cluster inside one process: N
// brokers sharing one coordination service, plus optionally the schema
// registry on that same service. `tributary dev` is a Cluster with a
// banner; `tributary pipeline up` runs three of them (dc1, dc2, analytics).
//
// # Coordination
//
// With Config.ZooKeeper empty the brokers share one in-process memcoord
// server kept durably in <Dir>/coordination (memcoord.Open), as a
// ZooKeeper server keeps its tree in its dataDir: a cluster started again on
// the same Dir has its topics with their replica assignments, leaders, ISRs
// and configs, and the ACLs, SCRAM users, schemas and ZooKeeper-group
// offsets, as they were (the brokers' sessions, and so their
// registrations, end with the process). On either coordination, Start
// then waits (up to 30 s) for every partition's replicas to be in sync
// again and moves leadership back to the preferred replicas, where a
// controlled stop left it elsewhere. A Dir written before the tree was
// kept is seeded from the data instead (producer-id blocks handed out
// before, then the topics found on disk, each partition served by the
// broker holding its data, with one replica). With Config.ZooKeeper set
// ("host:2181/chroot") every broker and the registry hold a ZooKeeper
// session instead, and the cluster state is ZooKeeper's.
//
// # Listeners and security
//
// Config.Listeners are every broker's client listeners (default one
// PLAINTEXT), all with Config.TLS's key pair and truststore on TLS ones, each
// with its own ssl.client.auth; Config.InterBrokerListener names the one the
// brokers replicate over. Config.ScramUsers are written as SCRAM credentials
// (broker/sasl's /config/users layout) into the coordination service before
// the brokers start, and Config.RegistrySecurity serves the registry over
// HTTPS and/or with basic authentication. Config.PrincipalRules is every TLS
// listener's ssl.principal.mapping.rules.
//
// # Authorization
//
// Config.Authorizer turns on the brokers' ACLs (broker/acl). Config.ACLs are
// stored in the coordination service, in Kafka's /kafka-acl layout, before
// the brokers start, so the first request is decided on them; CreateACLs and
// DeleteACLs change them while the cluster runs, and every broker follows
// the change notifications. The brokers' own principal on the inter-broker
// listener must be a super user (Config.Authorizer.SuperUsers) or hold
// ClusterAction and the topics' ACLs.
//
// # Layout on disk
//
// Broker i (ids 1..N) keeps its partitions under <Dir>/broker-<i>; the
// in-process coordination state is in <Dir>/coordination. Nothing else is
// written there.
//
// # Faults
//
// StopBroker and StartBroker stop one broker and bring it back on the same
// directory and the same port, for tests and soaks that inject faults.
//
// # Concurrency
//
// A Cluster's methods are safe for concurrent use. Close stops the
// registry and then the brokers, last started first, and is idempotent.
package devcluster
