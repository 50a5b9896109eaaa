package pageview

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"
)

// Schema is the Avro schema of the page-view event. A
// record is identified by (producer, seq): producer is unique per producer
// run and seq counts from 0 without gaps, which is what lets a reader of
// the loaded files prove every record is there exactly once.
const Schema = `{
  "type": "record",
  "name": "PageView",
  "namespace": "tributary.examples",
  "doc": "One page view, produced in an online datacenter.",
  "fields": [
    {"name": "datacenter", "type": "string", "doc": "where the view was produced, e.g. dc1"},
    {"name": "producer", "type": "string", "doc": "the producing run, unique per run"},
    {"name": "seq", "type": "long", "doc": "0, 1, 2, ... per producer"},
    {"name": "user", "type": "string"},
    {"name": "page", "type": "string"},
    {"name": "referrer", "type": ["null", "string"], "default": null},
    {"name": "timestamp", "type": {"type": "long", "logicalType": "timestamp-millis"}, "doc": "event time; also the record's timestamp"}
  ]
}`

// Topic is the page-view topic's default name.
const Topic = "pageviews"

var pages = []string{"/", "/jobs", "/feed", "/profile", "/search", "/messages", "/settings", "/groups"}

// Event returns the native (goavro) value of page view seq of producer
// in datacenter at ts. Everything but the timestamp is a function of seq,
// so a test can recompute what it expects.
func Event(datacenter, producer string, seq int64, ts time.Time) map[string]any {
	var referrer any // null
	if seq%3 == 0 {
		referrer = map[string]any{"string": "https://search.example/?q=" + strconv.FormatInt(seq%97, 10)}
	}
	return map[string]any{
		"datacenter": datacenter,
		"producer":   producer,
		"seq":        seq,
		"user":       User(seq),
		"page":       pages[seq%int64(len(pages))],
		"referrer":   referrer,
		"timestamp":  ts.UTC().Truncate(time.Millisecond),
	}
}

// User is the user (and record key) of page view seq.
func User(seq int64) string { return "user-" + strconv.FormatInt(seq*7919%1000, 10) }

// NewProducerID returns a fresh producer run id, "<datacenter>-<8 hex>".
func NewProducerID(datacenter string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return datacenter + "-" + hex.EncodeToString(b[:])
}
