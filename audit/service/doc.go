// Package service is the audit service: it consumes the audit topic of
// every configured cluster, sums the events of every tier in a store
// (package audit/store) and serves reports over HTTP: a JSON API, a
// Prometheus /metrics endpoint and a dashboard at /.
//
// # Consuming
//
// Each cluster's audit topic is read partition by partition from the
// offsets stored with the counts; a poll's events and the offsets after
// them are applied in one store transaction, so a restart (even after kill
// -9) resumes exactly where the last applied poll ended. Events are
// deduplicated on their ID, so the same event read from two clusters (the
// mirror carries __audit into the analytics cluster) counts once. The
// topic is read with isolation.level=read_committed: an exactly-once
// mirror writes its counts in the transactions of the records they count,
// and those of an aborted transaction must not count.
// Partitions added to an audit topic are picked up within
// PartitionRefresh.
//
// Bad input is skipped and never stops the service: bytes that are not
// JSON (garbage, a truncated event), an unknown format version, invalid
// fields (negative counts, unaligned windows, empty names) and counts for
// windows further in the future than Config.MaxFuture, and events for
// windows older than Config.Retention (pruned with their event IDs, so a
// re-sent one must not count again). Each is counted in
// audit_service_bad_events_total{cluster,reason} and logged once with its
// cluster, partition and offset (the offset is stored past it, so a
// restart does not log it again).
//
// # Reports
//
// A window is closed once no tier has reported on it for Grace windows
// after its end: closed = now >= max(window end, last update) + Grace x
// window. For each topic and window the report gives the producer tier's
// total and, for each other tier, its total, the records missing
// (producer - tier, when positive), the surplus (tier - producer, when
// positive: duplicates, or counts a crashed producer never published) and
// completeness = tier / producer. A tier is expected in every window of a
// topic from the first window it reported on; a closed window is
// incomplete when an expected tier misses records. A surplus is never a
// loss.
//
// # HTTP API
//
//	GET /api/topics                                    {"topics": ["clicks", ...]}
//	GET /api/topics/{topic}/windows?from=T&to=T        [WindowReport, ...] (window_start in [from, to), RFC 3339)
//	GET /api/topics/{topic}/windows/{start}            Breakdown (start in RFC 3339 or Unix ms)
//	GET /api/topics/{topic}/partitions                 [hours.HourReport, ...]: the loader output's partitions (hours)
//	                                                   with state and counts (with Config.Readiness; else 404)
//	GET /metrics                                       Prometheus
//	GET /                                              the dashboard (one self-contained HTML page)
//	GET /healthz                                       "ok", without authentication
//
// The dashboard plots each downstream tier's completeness per window from
// the windows API: closed windows on a solid line, open ones (closed:
// false, still counting, so "nothing loaded yet" reads 0%) as hollow
// points on dashed steps; the y-axis runs from 0% in round steps (25% up
// to 100%, wider above). Its requests are built from location.origin, so
// a page opened as https://user:password@host/ works and its requests
// carry the credentials the browser logged in with.
//
// With Config.Security the listener serves HTTPS and/or requires basic
// authentication; every path but /healthz needs the Read permission (a
// viewer role).
//
// # Concurrency
//
// A Service runs one goroutine per cluster plus the HTTP server; its
// handlers are safe for concurrent use.
package service
