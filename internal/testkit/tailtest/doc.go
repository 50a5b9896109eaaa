// Package tailtest is the test fixture of the pipeline's tail: an
// in-process analytics cluster (devcluster) with its schema
// registry and topics, a Kafka client and an Avro serializer on it, and a
// fresh output directory on the test HDFS (testenv.HDFS) for the loader
// and the compaction jobs to write. The tests of package jobs and of
// pipeline/tablestest start one with Start.
//
// Everything is closed when the test ends; the HDFS directory is removed
// unless the test failed (it is the evidence). It imports neither jobs nor
// the loader, so package jobs' own tests can use it. A Tail is safe for
// concurrent use as its parts are (devcluster, kgo, serde, filesys).
package tailtest
