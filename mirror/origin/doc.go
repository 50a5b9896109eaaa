// Package origin is the mirror's origin header: its name, its value format
// and its parser, shared by the mirror, which writes it, and by consumers
// that drop mirrored duplicates with it (the loader), which need not import
// the mirror for it.
//
// Format (frozen): every mirrored record carries the header Header with the
// value "<source>/<partition>/<offset>" (e.g. "dc1/3/1200"): the source
// cluster's name, the record's partition and offset there, the source topic
// being the record's own topic before any rename. A consumer keeps the
// largest offset seen per (source, topic, partition) and drops a record at
// or below it: that turns the mirror's at-least-once into exactly-once.
//
// The functions are pure and safe for concurrent use.
package origin
