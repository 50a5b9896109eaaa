// Package audit counts what each tier of the pipeline handled, per topic and
// time window, and publishes the counts as audit events to an audit topic
// (DefaultTopic, "__audit"). The audit service (package audit/service)
// sums the events of every tier and reports, per topic and window, whether
// each tier saw every record the producers acknowledged.
//
// # Windows
//
// A record belongs to the window of its own timestamp (never of the time a
// tier handles it), so every tier puts the same record in the same window
// however late it sees it. Windows are aligned on the Unix epoch:
//
//	window_start = ts_ms - (ts_ms mod window_ms)   (ts_ms >= 0, UTC)
//
// which is what WindowStart computes.
//
// # Events
//
// An event is a delta: "tier T, instance I, handled Count more records
// (Bytes more bytes, Errors records it could not handle) of topic X in
// cluster C whose timestamps fall in window W". The service adds deltas up
// and deduplicates on the event's ID: an event published twice (a retry
// after a lost acknowledgement, the mirror carrying __audit into another
// cluster) counts once. A counter's deltas not yet published when its
// process crashes are lost to audit only: the report then shows more
// records downstream than at the producer (a surplus), never a false loss.
//
// # Wire format (frozen, version 1)
//
// Each event is one record of the audit topic. The record key is the
// instance (for per-instance order; the service does not depend on it) and
// the value is a UTF-8 JSON object:
//
//	{
//	  "v": 1,                                  // format version; the service skips other versions
//	  "id": "3f0c...-17",                      // unique per event; a re-send carries the same id
//	  "tier": "producer",                      // "producer", "mirror", "loader" or a user's name
//	  "cluster": "dc1",                        // cluster the counted records were in
//	  "instance": "host1:4242",                // the counting process
//	  "topic": "clicks",
//	  "window_start": "2026-11-30T15:10:00Z",  // RFC 3339, UTC, aligned as above
//	  "window_ms": 600000,                     // the window's length in milliseconds (> 0)
//	  "count": 1234,                           // records (>= 0)
//	  "bytes": 56789,                          // key + value bytes (>= 0)
//	  "errors": 0,                             // records the tier could not handle (>= 0)
//	  "emitted_at": "2026-11-30T15:10:31.5Z"   // RFC 3339, when the event was built
//	}
//
// "id", "tier", "topic" and "window_start" are required; unknown fields are
// ignored. A third-party tier emits events by producing such records to the
// audit topic; any ID scheme works as long as an ID is never reused for a
// different delta. Counter uses "<instance-uuid>-<sequence>".
//
// # Concurrency
//
// Counter.Count and Counter.CountErrors are safe for concurrent use and
// cheap: a lookup in an immutable map loaded through an atomic pointer and
// atomic adds, no lock (a new topic or window copies the map under a mutex
// once). Cells keep running totals and publishing emits their deltas since
// the last publish; a cell idle for three publishes leaves the map and is
// read once more by the next publish, for a Count that still held it. Publishing runs on the Counter's own
// goroutine every Config.Interval, and on Flush and Close; a failed publish
// is retried with the same events (same IDs) before newer deltas.
//
// Records of the audit topic itself, and of any topic whose name starts
// with "__", are never counted.
//
// # The topic
//
// Nothing here creates the audit topic: a publisher asks for it with
// auto-creation allowed, and a Tributary broker creates DefaultTopic the
// way Kafka creates its internal topics, replicated over
// audit.topic.replication.factor brokers (3, capped at the live brokers;
// see broker.AuditTopic), so that one dead broker leaves every audit
// partition a leader. A broker with auto.create.topics.enable=false needs
// the topic created beforehand.
package audit
