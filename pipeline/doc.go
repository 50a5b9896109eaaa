// Package pipeline runs the whole Tributary pipeline in one process, the
// system of the 2011 Kafka paper end to end: two online datacenter
// clusters (dc1, dc2), each with an Avro page-view producer; a mirror
// copying both into the analytics cluster; a loader writing the analytics
// cluster's records to Avro container files on the local disk or HDFS;
// the schema registry; and the audit service comparing what every tier
// counted. It backs `tributary pipeline up` and `tributary pipeline demo`
// (make demo) and the pipeline tests; the multi-process soak is
// pipeline/soak.
//
// # Parts
//
// Each cluster is a devcluster Cluster (its brokers share one
// in-process memcoord server, or one ZooKeeper chroot <root>/<cluster>
// with Config.ZooKeeper). The mirror, the loader and the audit service are
// the mirror, loader (or jobs, for the scheduled loader) and
// audit/service libraries running on goroutines; the scheduled loader's
// runs are `tributary loader run` child processes of Config.Executable.
//
// The producers' audit counts (tier "producer") go to their own
// datacenter's __audit topic and travel to analytics through the mirror,
// as at LinkedIn; the mirror (tier "mirror") and the loader (tier
// "loader") publish to analytics' __audit. The audit service reads the
// audit topic of every cluster and counts each event once (by its ID).
//
// # Layout
//
//	<Dir>/<cluster>/broker-<id>/   broker data of dc1, dc2, analytics
//	<Dir>/audit/audit.db           the audit service's store
//	<Dir>/loader.properties        the scheduled loader job's configuration
//	<Dir>/tables.properties        with Config.HiveMetastoreURIs: the tables configuration
//	                               (jobs compact --tables-config's keys)
//	<Dir>/secure/                  with Config.Secure: the generated CA, certificates,
//	                               passwords (mode 0600) and client properties (secure.go)
//	<Dir>/data/                    loaded files (without HDFS), the loader's layout
//	                               (package hours), compacted hours in Parquet:
//	    <topic>/<yyyy>/<MM>/<dd>/<HH>/<topic>+<partition>+<first>+<last>+s<schemaID>.avro
//
// # Secured
//
// With Config.Secure every connection is TLS and every client
// authenticates with its own user: SASL_SSL (SCRAM-SHA-512) from the
// producers, the mirror's sources, the loader, the audit service and the
// topic set-up (user admin); SSL with the mirror's client certificate on
// analytics' SSL listener (ssl.client.auth=required); SSL with the brokers'
// certificates on every cluster's INTERNAL inter-broker listener; HTTPS with
// basic authentication for the registry and the dashboard. Start generates
// the files (package internal/pki) and writes the SCRAM credentials into each
// cluster's coordination service before its brokers start; Kafka clients read
// their passwords through ${file:...} references, never from a file that
// holds anything else.
//
// Secured, every cluster also authorizes (acls.go): the authorizer on with
// allow.everyone.if.no.acl.found=false, the brokers' own principal
// (User:broker-<cluster>) and the admin as super.users, and each tier's
// least-privilege ACLs stored in the cluster's coordination service before
// any broker starts. A tier refused by a missing ACL says so in its log (the
// mirror stops the partition, tributary_mirror_stopped_partitions in
// MirrorMetrics) and the audit report shows the windows it missed.
//
// # The proof
//
// Page views (package pipeline/pageview) carry (producer, seq): a
// producer run's id and a gap-free sequence. Verify reads every loaded
// file back record by record (Avro or compacted Parquet, as package
// hours lists them) and checks that each acknowledged seq of each
// producer is there exactly once (a send that failed may be there at most once), and asks the audit
// service that every closed window of the topic is complete, with the
// loader's count equal to the producers'. Demo prints the report and ends
// with the line
//
//	pipeline: P produced, M mirrored, L loaded exactly once, audit complete in C of W closed windows
//
// # Readiness and compaction
//
// With Config.CompactInterval a "compact" part runs package compact over
// the output that often: closed partitions (of Config.PartitionDuration,
// the loader's partition.duration.ms; the demo uses a minute) become ready
// (_SUCCESS) once the in-process audit service's counts prove them
// complete, and ready ones are compacted into Parquet. Compaction passes
// and Verify's reading of the files take turns (filesMu). After the proof,
// Verify runs passes until every partition is ready and compacted (or the
// drain time and two minutes are up) and Demo prints, after the summary:
//
//	readiness: R of P partitions ready (audit-proved), C compacted
//
// # Tables
//
// With Config.HiveMetastoreURIs the compaction part registers the topic's
// table, <HiveDatabase>.<Topic>, in that Hive Metastore (package
// jobs/tables): each partition once it is ready, at its Avro files, and
// again at its Parquet once compacted. Start writes <Dir>/tables.properties
// (hive.integration, hive.metastore.uris, hive.database,
// schema.registry.url: what `tributary jobs compact --tables-config` and
// `jobs retention --tables-config` take), registers through what it says,
// and reaches the metastore once before the parts start: a metastore that
// is not thrift://host:port, or does not answer, fails Start with
// ErrTables. The banner names the table and prints a spark-sql command
// that queries it.
//
// # Stopping and faults
//
// Close stops the producers (waiting for their acknowledgements), then the
// mirror (which drains and commits), the loader and the audit service,
// then the clusters. StopPart/StartPart restart the mirror, the loader or
// the audit service; devcluster's StopBroker/StartBroker take a broker
// away and back. These are graceful in-process stops, not SIGKILLs.
//
// # Concurrency
//
// A Pipeline's methods are safe for concurrent use.
package pipeline
