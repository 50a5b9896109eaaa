package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestConsumerGroupProperties: the group.consumer.* keys reach the group
// coordinator's configuration, and bad values are refused naming the key.
func TestConsumerGroupProperties(t *testing.T) {
	cfg, _, err := ParseProperties(strings.NewReader("log.dir=/d\ngroup.consumer.session.timeout.ms=30000\n" +
		"group.consumer.heartbeat.interval.ms=2000\ngroup.consumer.assignors=range, uniform\ngroup.consumer.max.size=7\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Groups
	if g.ConsumerSessionTimeout != 30*time.Second || g.ConsumerHeartbeatInterval != 2*time.Second ||
		fmt.Sprint(g.ConsumerAssignors) != "[range uniform]" || g.ConsumerMaxSize != 7 {
		t.Fatalf("parsed %+v", g)
	}
	for _, bad := range []string{"group.consumer.assignors=sticky", "group.consumer.heartbeat.interval.ms=60000",
		"group.consumer.session.timeout.ms=0", "group.consumer.max.size=0"} {
		_, _, err := ParseProperties(strings.NewReader("log.dir=/d\n" + bad + "\n"))
		key, _, _ := strings.Cut(bad, "=")
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
