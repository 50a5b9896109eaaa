package partlog

import (
	"errors"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero is defaults", Config{}, true},
		{"unlimited retention", Config{RetentionMs: -1, RetentionBytes: -1}, true},
		{"negative segment", Config{SegmentBytes: -1}, false},
		{"segment over 2 GiB", Config{SegmentBytes: 3 << 30}, false},
		{"negative roll", Config{SegmentMs: -time.Second}, false},
		{"negative index interval", Config{IndexIntervalBytes: -5}, false},
		{"negative flush count", Config{FlushIntervalMessages: -1}, false},
		{"negative flush interval", Config{FlushInterval: -time.Second}, false},
	}
	for _, tc := range tests {
		err := tc.cfg.Validate()
		if tc.ok != (err == nil) || !tc.ok && !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate() = %v", tc.name, err)
		}
		if !tc.ok {
			if _, err := Open(t.TempDir(), tc.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%s: Open accepted it: %v", tc.name, err)
			}
		}
	}
	d := Config{}.withDefaults()
	if d.SegmentBytes != 1<<30 || d.SegmentMs != 168*time.Hour || d.IndexIntervalBytes != 4096 ||
		d.RetentionMs != 168*time.Hour || d.RetentionBytes != -1 || d.Logger == nil || d.Now == nil {
		t.Fatalf("defaults %+v", d)
	}
}
