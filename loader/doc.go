// Package loader loads Kafka topics into HDFS (or a local directory) as
// Avro object container files, committing data and offsets together, so
// that every record of the consumed range lands exactly once whatever
// crashes in between (paper §4; Camus, Gobblin, kafka-connect-hdfs).
package loader
