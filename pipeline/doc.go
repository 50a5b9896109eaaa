// Package pipeline runs the whole Tributary pipeline in one process: two
// online datacenter clusters (dc1, dc2), the analytics cluster, the schema
// registry, a page-view producer on each datacenter, a mirror from both
// datacenters into analytics, a loader writing Avro files to a local
// directory or HDFS, and the audit service comparing what every tier
// counted. It is `tributary pipeline up` and `tributary pipeline demo`.
package pipeline
