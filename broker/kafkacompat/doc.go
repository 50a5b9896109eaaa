// Package kafkacompat holds the tests of issue 17: third-party Kafka
// tooling run, unchanged, against a cluster of `tributary broker` processes
// on the real test ZooKeeper. It has no code outside its tests.
//
//   - Apache Kafka 2.8.2's own tools (jars from Maven Central, installed by
//     scripts/install-deps.sh into .cache/kafka-2.8/lib): TopicCommand and
//     ConfigCommand with --zookeeper, which read and write the registries
//     (/brokers/topics, /config/topics, /config/changes) directly, and
//     DumpLogSegments over every file of a multi-segment partition, which
//     reads our .log, .index and .timeindex files as Kafka's own log layer
//     would. Their outputs are checked by content against what kadm reports
//     and what the test produced.
//   - LinkedIn's Burrow 1.2.1 (Debian package burrow): its ZooKeeper consumer
//     module reads /consumers/<group>/offsets, as written by client's
//     ZooKeeper group consumer, and its kafka cluster module asks our brokers
//     for end offsets (ListOffsets v0); its Kafka consumer module reads the
//     group coordinator's __consumer_offsets topic and decodes our
//     OffsetCommit records (value version 3, as Kafka 2.1+ writes). For
//     both, the lag its HTTP API reports must be end offset minus committed
//     offset, per partition.
//
// Each test runs its own brokers (internal/testkit/proccluster, with a
// second, TLS listener) in its own ZooKeeper chroot and stops every process
// it starts. A missing tool fails the test with the make target that
// installs it; nothing is skipped.
package kafkacompat
