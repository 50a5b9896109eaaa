package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Defaults.
const (
	// DefaultTopic is the audit topic.
	DefaultTopic = "__audit"
	// DefaultWindow is the length of an audit window.
	DefaultWindow = 10 * time.Minute
	// DefaultInterval is how often a Counter publishes its deltas.
	DefaultInterval = 30 * time.Second
	// Version is the wire format version this package writes and reads.
	Version = 1
)

// Well-known tier names.
const (
	TierProducer = "producer"
	TierMirror   = "mirror"
	TierLoader   = "loader"
)

// Event is one audit event: how many records (and bytes) of one topic whose
// own timestamps fall in one window a tier instance handled. Events are
// deltas; the service sums them and deduplicates on ID.
type Event struct {
	ID          string        // unique per event; a re-send carries the same ID
	Tier        string        // "producer", "mirror", "loader", or a user's name
	Cluster     string        // the cluster the counted records were in
	Instance    string        // the process, e.g. "host:pid" or a job name
	Topic       string        //
	WindowStart time.Time     // UTC, aligned: WindowStart(ts, Window)
	Window      time.Duration // the window's length
	Count       int64         // records
	Bytes       int64         // bytes of keys and values
	Errors      int64         // records the tier could not handle
	EmittedAt   time.Time     // when the event was built
}

// WindowStart returns the start of the window of length window that holds
// ts: windows are aligned on the Unix epoch at millisecond precision, so
// WindowStart is the same for the same record in every tier. A window under
// a millisecond counts as one millisecond.
func WindowStart(ts time.Time, window time.Duration) time.Time {
	w := window.Milliseconds()
	if w <= 0 {
		w = 1
	}
	ms := ts.UnixMilli()
	start := ms - ms%w
	if ms%w < 0 { // before 1970: round towards the past
		start -= w
	}
	return time.UnixMilli(start).UTC()
}

// ignoredTopic reports whether records of topic are never counted: the
// audit topic itself and internal topics ("__" prefix).
func ignoredTopic(topic, auditTopic string) bool {
	return topic == auditTopic || strings.HasPrefix(topic, "__")
}

// wireEvent is the frozen JSON layout of version 1 (see doc.go).
type wireEvent struct {
	V           int    `json:"v"`
	ID          string `json:"id"`
	Tier        string `json:"tier"`
	Cluster     string `json:"cluster"`
	Instance    string `json:"instance"`
	Topic       string `json:"topic"`
	WindowStart string `json:"window_start"`
	WindowMs    int64  `json:"window_ms"`
	Count       int64  `json:"count"`
	Bytes       int64  `json:"bytes"`
	Errors      int64  `json:"errors"`
	EmittedAt   string `json:"emitted_at,omitempty"`
}

// MarshalEvent encodes e in the version 1 wire format.
func MarshalEvent(e Event) ([]byte, error) {
	w := wireEvent{
		V: Version, ID: e.ID, Tier: e.Tier, Cluster: e.Cluster, Instance: e.Instance,
		Topic: e.Topic, WindowStart: e.WindowStart.UTC().Format(time.RFC3339Nano),
		WindowMs: e.Window.Milliseconds(), Count: e.Count, Bytes: e.Bytes, Errors: e.Errors,
	}
	if !e.EmittedAt.IsZero() {
		w.EmittedAt = e.EmittedAt.UTC().Format(time.RFC3339Nano)
	}
	return json.Marshal(w)
}

// UnmarshalEvent decodes and validates one event. Errors wrap ErrBadEvent
// or ErrUnknownVersion.
func UnmarshalEvent(b []byte) (Event, error) {
	var probe struct {
		V *int `json:"v"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	if probe.V == nil {
		return Event{}, fmt.Errorf("%w: no version field \"v\"", ErrBadEvent)
	}
	if *probe.V != Version {
		return Event{}, fmt.Errorf("%w: %d", ErrUnknownVersion, *probe.V)
	}
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	e := Event{
		ID: w.ID, Tier: w.Tier, Cluster: w.Cluster, Instance: w.Instance, Topic: w.Topic,
		Window: time.Duration(w.WindowMs) * time.Millisecond,
		Count:  w.Count, Bytes: w.Bytes, Errors: w.Errors,
	}
	var err error
	if e.WindowStart, err = time.Parse(time.RFC3339Nano, w.WindowStart); err != nil {
		return Event{}, fmt.Errorf("%w: window_start: %v", ErrBadEvent, err)
	}
	e.WindowStart = e.WindowStart.UTC()
	if w.EmittedAt != "" {
		if e.EmittedAt, err = time.Parse(time.RFC3339Nano, w.EmittedAt); err != nil {
			return Event{}, fmt.Errorf("%w: emitted_at: %v", ErrBadEvent, err)
		}
	}
	if err := e.Check(); err != nil {
		return Event{}, err
	}
	return e, nil
}

// Check validates the fields of an event (not its timing, which only the
// service can judge).
func (e Event) Check() error {
	switch {
	case e.ID == "":
		return fmt.Errorf("%w: empty id", ErrBadEvent)
	case e.Tier == "":
		return fmt.Errorf("%w: empty tier", ErrBadEvent)
	case e.Topic == "":
		return fmt.Errorf("%w: empty topic", ErrBadEvent)
	case e.Window <= 0:
		return fmt.Errorf("%w: window_ms must be > 0", ErrBadEvent)
	case e.Count < 0 || e.Bytes < 0 || e.Errors < 0:
		return fmt.Errorf("%w: negative count, bytes or errors", ErrBadEvent)
	case !WindowStart(e.WindowStart, e.Window).Equal(e.WindowStart):
		return fmt.Errorf("%w: window_start %s is not aligned on window_ms %d",
			ErrBadEvent, e.WindowStart.Format(time.RFC3339Nano), e.Window.Milliseconds())
	}
	return nil
}
