package mirror

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testproc"
)

// TestMirrorWarnsTopicsMatchNothing: a topics regex with a typo ("click"
// for the source's "clicks") mirrors nothing; the mirror says so, once,
// naming the regex and the source's topics, and still mirrors a matching
// topic created later.
func TestMirrorWarnsTopicsMatchNothing(t *testing.T) {
	dc1, target := newCluster(t, "dc1"), newCluster(t, "analytics")
	dc1.CreateTopicWithConfigs(t, "clicks", 1, nil)
	var logs testproc.SyncBuffer
	cfg := Config{
		Sources:              []SourceConfig{zkSource(dc1)},
		TargetBrokers:        []string{target.Addr()},
		TargetName:           "analytics",
		Topics:               "click",
		GroupID:              "mirror-typo",
		TopicRefreshInterval: 200 * time.Millisecond,
		CommitInterval:       500 * time.Millisecond,
		RebalanceBackoff:     200 * time.Millisecond,
		AuditDisable:         true,
		Logger:               slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	runMirror(t, cfg, nil)
	const warning = "topics matches no topic of this source"
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(logs.String(), warning) {
		if time.Now().After(deadline) {
			t.Fatalf("no warning that topics=click matches nothing within a minute; log:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	line := logs.String()[strings.Index(logs.String(), warning):]
	line = line[:strings.IndexByte(line, '\n')]
	if !strings.Contains(line, "topics=click") || !strings.Contains(line, "source_topics=clicks") {
		t.Fatalf("warning %q: want the regex and the source's topics named", line)
	}

	want := newProduced()
	dc1.CreateTopicWithConfigs(t, "click", 1, nil)
	want.produce(t, dc1.Client(t), "dc1", "click", 1, 0, 50)
	readTarget(t, target, "click").waitComplete(t, want, time.Minute)
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Errorf("the warning was logged %d times; want once until the match changes", n)
	}
}
