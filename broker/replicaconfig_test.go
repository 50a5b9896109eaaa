package broker

import (
	"testing"
	"time"
)

// TestControlledShutdownSetting: controlled.shutdown.enable has one field,
// NoControlledShutdown, whose zero value is Kafka's default (enabled), and
// applying defaults never overwrites what the caller chose.
func TestControlledShutdownSetting(t *testing.T) {
	if !(ReplicationConfig{}).withDefaults().controlledShutdownEnabled() {
		t.Fatal("zero ReplicationConfig: controlled shutdown disabled, want Kafka's default (enabled)")
	}
	off := ReplicationConfig{NoControlledShutdown: true}.withDefaults()
	if off.controlledShutdownEnabled() || !off.NoControlledShutdown {
		t.Fatal("NoControlledShutdown=true did not survive withDefaults")
	}
	c := Config{LogDirs: []string{"x"}, Replication: ReplicationConfig{NoControlledShutdown: true}}.withDefaults()
	if c.Replication.controlledShutdownEnabled() {
		t.Fatal("Config.withDefaults re-enabled controlled shutdown")
	}
	for v, want := range map[string]bool{"true": true, "false": false} {
		cfg, _, err := ConfigFromProperties(map[string]string{"log.dirs": "x", "controlled.shutdown.enable": v})
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.withDefaults().Replication.controlledShutdownEnabled(); got != want {
			t.Errorf("controlled.shutdown.enable=%s: enabled %v, want %v", v, got, want)
		}
	}
}

func TestLeaderImbalanceCheckIntervalDefault(t *testing.T) {
	// Kafka's leader.imbalance.check.interval.seconds default is 300.
	if got := (ReplicationConfig{}).withDefaults().LeaderImbalanceCheckInterval; got != 300*time.Second {
		t.Fatalf("default leader.imbalance.check.interval %v, want Kafka's 300s", got)
	}
}
