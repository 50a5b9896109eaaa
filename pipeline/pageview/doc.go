// Package pageview is the example page-view event of the pipeline and of
// examples/pageviews: its Avro schema (frozen: loaded files and compacted
// hours are read back with it) and a deterministic generator, so that a
// reader of the loaded files can recompute what each record must hold and
// prove every record is there exactly once. It depends on nothing but the
// standard library; its functions are safe for concurrent use.
package pageview
