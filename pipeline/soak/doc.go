// Package soak is the production soak: the whole pipeline (package
// pipeline's system, the 2011 Kafka paper's DC → analytics → HDFS) run as
// a real deployment runs it, every part its own OS process of the
// tributary binary, under a random schedule of the faults such a pipeline
// lives with, and proven afterwards to have lost and doubled nothing. It
// backs `tributary soak` and `make soak`.
//
// # Processes
//
//   - One 3-node ZooKeeper ensemble (scripts/zk.sh, on a port offset of its
//     own), a chroot per cluster: <ensemble>/tributary-soak/<run>/<cluster>.
//   - HDFS: one MiniDFSCluster JVM with 2 DataNodes, replication 2
//     (testing/hdfs/start.sh --datanodes 2 --datanode-control).
//   - dc1, dc2 and analytics: 3 brokers each (`tributary broker`), topics
//     with replication factor 3 and min.insync.replicas=2.
//   - 2 schema registries on analytics' chroot, behind one loopback proxy
//     that skips the one that is down (package link).
//   - The audit service (`tributary audit serve`) reading all three audit
//     topics.
//   - 2 mirrors (`tributary mirror`, one ZooKeeper group per datacenter)
//     reaching each datacenter through its link: each datacenter broker has
//     a REMOTE listener advertised at a proxy port of the datacenter's
//     link (package link), so every connection the mirror makes to a
//     datacenter crosses the link.
//   - 2 loader processes (`tributary loader serve`) and 2 job schedulers
//     (`tributary jobs serve`) whose job runs `tributary loader run`, all of
//     the one loader job, splitting the partitions through ZooKeeper.
//   - A load generator per datacenter (`tributary soak produce`): page
//     views (package pipeline/pageview: producer, gap-free seq) with
//     acks=all, audited as tier producer, writing what was acknowledged to a
//     stats file.
//
// The harness supervises them as systemd would: a process that exits on
// its own (a registry whose ZooKeeper session expired does so on purpose)
// is restarted after a second and counted.
//
// # Faults
//
// One fault at a time, onsets a random gap apart (30–60 s, or at once
// when the previous fault's repair took longer; 3–6 s after the repair in a run
// shorter than 10 minutes), every kind once in a random order first, then
// random kinds; a short run produces until every kind has happened. The
// schedule comes from a seed, printed at the start (SOAK_SEED replays it;
// what the processes do in between is not replayable). Kinds: SIGKILL of
// a broker leading a page-view partition and of an in-sync follower, of a
// mirror, a loader, a scheduler while its loader run runs, the audit
// service and a registry, each restarted after a while; SIGSTOP of a
// broker for its ZooKeeper session plus 4 s, then SIGCONT; SIGKILL of a
// ZooKeeper member, restarted; a DataNode stopped and restarted; a
// datacenter link cut for 30–90 s (8–12 s short), then 40 ms of latency
// each way and a bandwidth cap for 2–4 minutes (15–25 s short) while the
// other faults go on. A broker fault waits for every ISR to be full again,
// before and after, so that no partition ever loses two replicas.
//
// # Checks
//
// Continuously (every minute, 30 s short): the loaded files are read back
// (packages hours and hours/rows) and no record may be there
// twice; progress and the audit service's closed windows are printed. At
// the end the producers stop (their final reports count what was
// acknowledged), the run drains until every acknowledged record is loaded
// and every audit window closed (bounded), and then:
//
//   - mirrored: the analytics topic read from start to end; each
//     acknowledged record must be there (at least once: the mirror is
//     at-least-once, its extra copies are the mirror tier's duplicates);
//   - loaded: the files read with Python's fastavro (Config.Python), an
//     independent reader, and with package rows: each acknowledged record
//     exactly once, its content what its producer sent, nothing never sent,
//     and both readers agreeing; every loaded record is in analytics;
//   - audit: every closed window's producer count matched by the mirror
//     tier (at least) and the loader tier (exactly);
//   - produce → file latency: each record's file's modification time minus
//     its event time, p50/p99/max;
//   - resources: RSS and descriptors of every process, from /proc, sampled
//     every minute (20 s short).
//
// Run prints a summary table and ends with the line
//
//	soak: P produced, M mirrored, L loaded exactly once, F faults (K kill -9), audit complete in C of W closed windows
//
// and Result.OK holds only if P = M = L, nothing was loaded twice, C = W
// and no check saw a problem; every problem names its window and topic,
// file or record. Config.SkipDedupOnce injects a bug (each loader process
// keeps the first mirror duplicate it recognises; loader.EnvSkipDedupOnce)
// that the soak must catch.
//
// # Layout
//
//	<Dir>/config/   every process's properties (and jobs.yaml)
//	<Dir>/logs/     every process's output, appended across restarts
//	<Dir>/<cluster>/broker-<id>/, <Dir>/audit/, <Dir>/zookeeper/, <Dir>/hdfs/
//	<Dir>/producer-<dc>.json   the load generators' reports
//	<Dir>/readback/  the loaded files copied for fastavro
//	<Dir>/secure/    secured: CA, certificates, passwords (0600), users
//
// # Secured (Config.Secure, SOAK_SECURE=1)
//
// Every part as above, secured as the in-process secured pipeline is
// (package pipeline's SecureFiles: one CA, certificates, a random password
// per user), through each process's own configuration (secure.go):
//
//   - brokers: the client listener is SASL_SSL (SCRAM-SHA-512), a
//     datacenter's REMOTE listener (the mirror's, behind the link: the
//     proxy carries the TLS bytes unchanged) SASL_SSL too, INTERNAL (SSL
//     with required client certificates) between brokers;
//     authorizer.class.name with allow.everyone.if.no.acl.found=false,
//     super.users the cluster's brokers and admin; the users' SCRAM
//     credentials and the tiers' least-privilege ACLs (pipeline's
//     acls.go, the README's table) are written into each chroot before
//     its brokers start, as kafka-configs/kafka-acls --zookeeper do;
//     zookeeper.set.acl=true with zookeeper.digest.auth (${file:...}):
//     the brokers' nodes are read-only to the other tiers and
//     /config/users is the brokers' alone;
//   - each tier its own user with Kafka's client keys (security.protocol,
//     ssl.truststore.*, sasl.mechanism, sasl.jaas.config with the password
//     by ${file:...}): producer-<dc> (`soak produce --command-config`),
//     mirror (source.<dc>.* and target.*), loader (the loader processes and
//     the scheduled runs), audit (`audit serve --command-config`); the
//     harness's own reads as admin;
//   - the registries and the audit service over HTTPS with basic
//     authentication (their --config; roles producer: write, reader: read,
//     admin), the clients with basic.auth.user.info and the CA;
//   - HDFS Kerberized (start.sh --kerberos: MiniKdc in the JVM,
//     dfs.data.transfer.protection=privacy), still 2 DataNodes with
//     --datanode-control; the loaders with connect.hdfs.principal,
//     connect.hdfs.keytab, hdfs.namenode.principal and krb5.conf, and
//     the harness reads the files back (copying them for fastavro) with
//     the same Kerberos login.
//
// Before the producers start, verifySecured proves it: an anonymous
// ZooKeeper session can neither read a SCRAM credential nor write under
// /brokers, a TLS client without a SASL login is refused by every
// cluster, the registry and the audit service answer 401 without
// credentials. Every fault kind runs as in the plain soak; the checks and
// the final line are the same.
//
// # Concurrency
//
// Run is one soak; several may run at once in different directories (every
// port is picked free, ZooKeeper's by a free offset).
package soak
