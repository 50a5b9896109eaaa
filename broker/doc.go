// Package broker is Tributary's Kafka-protocol server: it accepts Kafka
// clients (franz-go, librdkafka/kcat, the Java client) on a TCP listener and
// serves ApiVersions, Metadata, CreateTopics, DeleteTopics, Produce, Fetch,
// ListOffsets and InitProducerId on top of the storage engine in broker/log.
//
// # Wire format
//
// Frames are Kafka's: a big-endian int32 size, then the request header
// (api key, version, correlation id, client id, tagged fields for flexible
// versions) and the body. Every request and response body is encoded and
// decoded with github.com/twmb/franz-go/pkg/kmsg; the only bytes this package
// produces by hand are the frame size, the response header and, for Fetch,
// the length prefixes of record sets that are streamed from segment files.
// ApiVersions advertises exactly the version ranges in apiVersionTable.
//
// Fetch responses are written in pieces so that record bytes go from the
// segment files to the socket with sendfile: the response is encoded with a
// random 8-byte marker in place of each partition's records, the markers are
// located in the encoded bytes and replaced, at write time, by the length
// prefix and the file region. If a marker is not found exactly once the
// records are copied instead.
//
// # Storage and recovery
//
// A topic partition is a directory <topic>-<partition> under one of log.dirs,
// owned by broker/log; the broker discovers topics by listing those
// directories at start. Producer ids are handed out in blocks recorded in the
// file producer-ids in the first log directory before any id of the block is
// used, so ids stay unique across restarts and crashes. Recovery after an
// unclean stop is the storage engine's business; Close flushes and closes
// every log so that it writes its clean-shutdown marker.
//
// # Concurrency
//
// Each connection has one goroutine reading frames ahead (decoding them) and
// one handling them in order and writing responses, so responses leave in
// request order, as Kafka's one-request-at-a-time-per-connection processing
// does. Different connections run in parallel. Topic metadata is guarded by
// a lock in Broker; each partition log is safe for concurrent Append and
// Read. Fetch long-polls by registering a waiter on every partition it reads;
// an append wakes the waiters of its partition. A long-poll also ends when
// its client disconnects or the broker shuts down.
//
// A Broker is safe for concurrent use. Close may be called more than once.
package broker
