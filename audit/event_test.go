package audit

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func sampleEvent() Event {
	return Event{
		ID: "abc-1", Tier: "producer", Cluster: "dc1", Instance: "h:1", Topic: "clicks",
		WindowStart: time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC), Window: 10 * time.Minute,
		Count: 12, Bytes: 340, Errors: 1, EmittedAt: time.Date(2026, 11, 30, 15, 0, 31, 500_000_000, time.UTC),
	}
}

func TestEventRoundTrip(t *testing.T) {
	e := sampleEvent()
	b, err := MarshalEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"id":"abc-1","tier":"producer","cluster":"dc1","instance":"h:1","topic":"clicks",` +
		`"window_start":"2026-11-30T15:00:00Z","window_ms":600000,"count":12,"bytes":340,"errors":1,` +
		`"emitted_at":"2026-11-30T15:00:31.5Z"}`
	if string(b) != want {
		t.Fatalf("wire form\n got %s\nwant %s", b, want)
	}
	got, err := UnmarshalEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("round trip: got %+v want %+v", got, e)
	}
}

func TestUnmarshalEventRejects(t *testing.T) {
	cases := map[string]struct {
		in   string
		want error
	}{
		"garbage":     {"\x00\xff\x13garbage", ErrBadEvent},
		"truncated":   {`{"v":1,"id":"a","tier":"producer","topic":"t","window_st`, ErrBadEvent},
		"no version":  {`{"id":"a","tier":"p","topic":"t","window_start":"2026-01-01T00:00:00Z","window_ms":1000}`, ErrBadEvent},
		"version 2":   {`{"v":2,"id":"a"}`, ErrUnknownVersion},
		"negative":    {`{"v":1,"id":"a","tier":"p","topic":"t","window_start":"2026-01-01T00:00:00Z","window_ms":1000,"count":-5}`, ErrBadEvent},
		"no id":       {`{"v":1,"tier":"p","topic":"t","window_start":"2026-01-01T00:00:00Z","window_ms":1000}`, ErrBadEvent},
		"no window":   {`{"v":1,"id":"a","tier":"p","topic":"t","window_start":"2026-01-01T00:00:00Z"}`, ErrBadEvent},
		"unaligned":   {`{"v":1,"id":"a","tier":"p","topic":"t","window_start":"2026-01-01T00:00:01Z","window_ms":60000}`, ErrBadEvent},
		"bad time":    {`{"v":1,"id":"a","tier":"p","topic":"t","window_start":"yesterday","window_ms":1000}`, ErrBadEvent},
		"wrong types": {`{"v":1,"id":7,"tier":"p","topic":"t","window_start":"2026-01-01T00:00:00Z","window_ms":1000}`, ErrBadEvent},
	}
	for name, c := range cases {
		if _, err := UnmarshalEvent([]byte(c.in)); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", name, err, c.want)
		}
	}
}

func FuzzUnmarshalEvent(f *testing.F) {
	b, _ := MarshalEvent(sampleEvent())
	f.Add(b)
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := UnmarshalEvent(in)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to something that decodes the same.
		again, err := MarshalEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		e2, err := UnmarshalEvent(again)
		if err != nil {
			t.Fatalf("re-encoded event does not decode: %v", err)
		}
		e.EmittedAt, e2.EmittedAt = e.EmittedAt.UTC(), e2.EmittedAt.UTC()
		if !reflect.DeepEqual(e, e2) {
			t.Fatalf("round trip changed the event: %+v vs %+v", e, e2)
		}
	})
}
