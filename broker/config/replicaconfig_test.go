package config

import (
	"testing"
	"time"
)

// TestControlledShutdownSetting: controlled.shutdown.enable has one field,
// NoControlledShutdown, whose zero value is Kafka's default (enabled), and
// applying defaults never overwrites what the caller chose.
func TestControlledShutdownSetting(t *testing.T) {
	if !(Replication{}).WithDefaults().ControlledShutdownEnabled() {
		t.Fatal("zero Replication: controlled shutdown disabled, want Kafka's default (enabled)")
	}
	off := Replication{NoControlledShutdown: true}.WithDefaults()
	if off.ControlledShutdownEnabled() || !off.NoControlledShutdown {
		t.Fatal("NoControlledShutdown=true did not survive withDefaults")
	}
	c := Config{LogDirs: []string{"x"}, Replication: Replication{NoControlledShutdown: true}}.WithDefaults()
	if c.Replication.ControlledShutdownEnabled() {
		t.Fatal("Config.withDefaults re-enabled controlled shutdown")
	}
	for v, want := range map[string]bool{"true": true, "false": false} {
		cfg, _, err := FromProperties(map[string]string{"log.dirs": "x", "controlled.shutdown.enable": v})
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.WithDefaults().Replication.ControlledShutdownEnabled(); got != want {
			t.Errorf("controlled.shutdown.enable=%s: enabled %v, want %v", v, got, want)
		}
	}
}

func TestLeaderImbalanceCheckIntervalDefault(t *testing.T) {
	// Kafka's leader.imbalance.check.interval.seconds default is 300.
	if got := (Replication{}).WithDefaults().LeaderImbalanceCheckInterval; got != 300*time.Second {
		t.Fatalf("default leader.imbalance.check.interval %v, want Kafka's 300s", got)
	}
}
