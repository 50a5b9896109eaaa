package cluster

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// rawTopic is a topic node as Kafka's readers see it.
type rawTopic struct {
	Version          int                `json:"version"`
	Partitions       map[string][]int32 `json:"partitions"`
	AddingReplicas   map[string][]int32 `json:"adding_replicas"`
	RemovingReplicas map[string][]int32 `json:"removing_replicas"`
	TopicID          *string            `json:"topic_id"`
}

func readTopicNode(t *testing.T, e *env, topic string) rawTopic {
	t.Helper()
	data, _ := e.get(t, topicPath(topic))
	var r rawTopic
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("topic node of %s: %v: %s", topic, err, data)
	}
	return r
}

func readConfigNode(t *testing.T, e *env, topic string) string {
	t.Helper()
	data, _ := e.get(t, topicConfigPath(topic))
	return string(data)
}

// write creates or overwrites path (parents included) through the admin
// session, as another tool would.
func (e *env) write(t *testing.T, path, data string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if _, err := e.admin.CreateAll(ctx, path, []byte(data), coord.Persistent); err == nil {
		return
	}
	if _, err := e.admin.Set(ctx, path, []byte(data), coord.AnyVersion); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// awaitNodes waits until the topic node and the config node satisfy cond.
func awaitNodes(t *testing.T, e *env, topic, what string, cond func(rawTopic, string) bool) (rawTopic, string) {
	t.Helper()
	var r rawTopic
	var cfg string
	testenv.WaitFor(t, waitTimeout, what, func() (bool, string) {
		r, cfg = readTopicNode(t, e, topic), readConfigNode(t, e, topic)
		return cond(r, cfg), ""
	})
	return r, cfg
}

func hasID(r rawTopic, id string) bool { return r.TopicID != nil && *r.TopicID == id }

// TestTopicIDInTopicNode: a created topic's node is Kafka 2.8's version 3
// with its id in topic_id; the config node holds the configs only; the id
// is the caller's when given, and the legacy key is refused.
func TestTopicIDInTopicNode(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2)
		ctx := ctxFor(t)
		must(t, ms[1].CreateTopic(ctx, "fresh", 2, 1, map[string]string{"retention.ms": "3600000"}))
		snap := await(t, ms[0], "fresh led", leadersAre("fresh", []int32{1, 2}))
		id := snap.Topics["fresh"].ID
		if !ValidTopicID(id) {
			t.Fatalf("topic id %q is not valid", id)
		}
		r := readTopicNode(t, e, "fresh")
		if r.Version != 3 || !hasID(r, id) || r.AddingReplicas == nil || r.RemovingReplicas == nil || len(r.Partitions) != 2 {
			t.Errorf("topic node %+v, want version 3 with topic_id %s", r, id)
		}
		if got := readConfigNode(t, e, "fresh"); got != `{"version":1,"config":{"retention.ms":"3600000"}}` {
			t.Errorf("config node %s", got)
		}
		if !maps.Equal(snap.Topics["fresh"].Configs, map[string]string{"retention.ms": "3600000"}) {
			t.Errorf("configs %v", snap.Topics["fresh"].Configs)
		}

		const mine = "h-aRhOLnTmqDUbtSNDDmYQ"
		must(t, ms[0].CreateTopicWithID(ctx, "chosen", mine, 1, 1, nil))
		snap = await(t, ms[1], "chosen visible", func(s Snapshot) bool { _, ok := s.Topics["chosen"]; return ok })
		if got := snap.Topics["chosen"].ID; got != mine || !hasID(readTopicNode(t, e, "chosen"), mine) {
			t.Errorf("chosen id: snapshot %q, node %+v", got, readTopicNode(t, e, "chosen"))
		}
		if err := ms[0].CreateTopicWithID(ctx, "badid", "short", 1, 1, nil); err == nil || e.exists(t, topicPath("badid")) {
			t.Errorf("an invalid id was accepted: %v", err)
		}
		wantErr(t, ms[0].CreateTopic(ctx, "reserved", 1, 1, map[string]string{LegacyTopicIDConfig: mine}),
			ErrInvalidTopicConfig, "legacy key in create")
		_, err := ms[0].UpdateTopicConfigs(ctx, "fresh", func(c map[string]string) error { c[LegacyTopicIDConfig] = mine; return nil })
		wantErr(t, err, ErrInvalidTopicConfig, "legacy key in update")

		// Many ids: all valid, none starting with '-'.
		for range 200 {
			id, err := NewTopicID()
			if err != nil || !ValidTopicID(id) || strings.HasPrefix(id, "-") || id == zeroTopicID {
				t.Fatalf("NewTopicID = %q, %v", id, err)
			}
		}
	})
}

// TestLegacyTopicIDMigrated: topics written with the id in the config node
// (by earlier Tributary versions) are rewritten by the controller, on
// taking office and on change, into a version 3 topic node with the same
// id and a config node with the configs only; the cache serves the id
// before and after. A topic written without an id (Kafka's TopicCommand)
// gets one; a reassignment in progress survives the rewrite.
func TestLegacyTopicIDMigrated(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		const oldID, laterID = "RDoKZ8zTRqWx3s8oU6c4aA", "Ab3l9bnnQ5eQpWf0q0mD2w"
		e.write(t, topicPath("old"), `{"version":1,"partitions":{"0":[1],"1":[2]}}`)
		e.write(t, topicConfigPath("old"), `{"version":1,"config":{"retention.ms":"3600000","tributary.topic.id":"`+oldID+`"}}`)
		e.write(t, topicPath("moving"), `{"version":2,"partitions":{"0":[1]},"adding_replicas":{"0":[2]},"removing_replicas":{}}`)
		e.write(t, topicConfigPath("moving"), `{"version":1,"config":{}}`)
		e.write(t, topicPath("kafka"), `{"version":3,"partitions":{"0":[2]},"adding_replicas":{},"removing_replicas":{}}`)
		e.write(t, topicConfigPath("kafka"), `{"version":1,"config":{"segment.bytes":"1048576"}}`)
		ms := e.joinAll(t, 1, 2)

		r, cfg := awaitNodes(t, e, "old", "old migrated", func(r rawTopic, cfg string) bool { return hasID(r, oldID) })
		if r.Version != 3 || len(r.Partitions) != 2 || cfg != `{"version":1,"config":{"retention.ms":"3600000"}}` {
			t.Errorf("after migration: topic %+v, config %s", r, cfg)
		}
		r, _ = awaitNodes(t, e, "moving", "moving got an id", func(r rawTopic, _ string) bool { return r.TopicID != nil })
		if len(r.AddingReplicas["0"]) != 1 || r.AddingReplicas["0"][0] != 2 {
			t.Errorf("the rewrite lost adding_replicas: %+v", r)
		}
		r, _ = awaitNodes(t, e, "kafka", "kafka topic got an id", func(r rawTopic, _ string) bool { return r.TopicID != nil })
		kafkaID := *r.TopicID
		for _, m := range ms {
			snap := await(t, m, "ids in metadata", func(s Snapshot) bool {
				return s.Topics["old"].ID == oldID && s.Topics["kafka"].ID == kafkaID && ValidTopicID(s.Topics["moving"].ID)
			})
			if !maps.Equal(snap.Topics["old"].Configs, map[string]string{"retention.ms": "3600000"}) {
				t.Errorf("member %d: configs of old %v", m.ID(), snap.Topics["old"].Configs)
			}
		}

		// On change: a legacy topic written while the controller serves.
		// The config node goes first, as Kafka's AdminZkClient and earlier
		// Tributary versions write them: a topic node seen alone is a topic
		// without an id, which the controller gives a new one.
		e.write(t, topicConfigPath("later"), `{"version":1,"config":{"tributary.topic.id":"`+laterID+`"}}`)
		e.write(t, topicPath("later"), `{"version":1,"partitions":{"0":[1]}}`)
		_, cfg = awaitNodes(t, e, "later", "later migrated", func(r rawTopic, _ string) bool { return hasID(r, laterID) })
		if cfg != `{"version":1,"config":{}}` {
			t.Errorf("config of later %s", cfg)
		}

		// A tool unaware of ids rewrites the node in place: the id comes back.
		e.write(t, topicPath("kafka"), `{"version":1,"partitions":{"0":[2]}}`)
		awaitNodes(t, e, "kafka", "kafka's id restored", func(r rawTopic, _ string) bool { return hasID(r, kafkaID) })
		await(t, ms[1], "kafka's id in metadata", func(s Snapshot) bool { return s.Topics["kafka"].ID == kafkaID })
	})
}

// TestUpdateTopicConfigsOfLegacyTopic: altering a topic whose id is still in
// its config node neither loses the id nor shows it to the update, whether
// the controller's migration or the update's own move lands first.
func TestUpdateTopicConfigsOfLegacyTopic(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		const id = "RDoKZ8zTRqWx3s8oU6c4aA"
		ms := e.joinAll(t, 1)
		e.write(t, topicConfigPath("legacy"), `{"version":1,"config":{"retention.ms":"1","tributary.topic.id":"`+id+`"}}`)
		e.write(t, topicPath("legacy"), `{"version":1,"partitions":{"0":[1]}}`)
		written, err := ms[0].UpdateTopicConfigs(ctxFor(t), "legacy", func(c map[string]string) error {
			if _, ok := c[LegacyTopicIDConfig]; ok {
				t.Errorf("the update saw the legacy key: %v", c)
			}
			c["retention.ms"] = "7200000"
			return nil
		})
		must(t, err)
		if !maps.Equal(written, map[string]string{"retention.ms": "7200000"}) {
			t.Errorf("written %v", written)
		}
		awaitNodes(t, e, "legacy", "id in the topic node, configs only in the config node", func(r rawTopic, cfg string) bool {
			return hasID(r, id) && cfg == `{"version":1,"config":{"retention.ms":"7200000"}}`
		})
		await(t, ms[0], "metadata", func(s Snapshot) bool {
			return s.Topics["legacy"].ID == id && maps.Equal(s.Topics["legacy"].Configs, written)
		})
	})
}

// TestConfigChangeNotificationsPurged: the controller deletes Kafka's config
// change notifications once they are older than Kafka's 15 minutes, and
// leaves younger ones and other nodes alone.
func TestConfigChangeNotificationsPurged(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		var skew atomic.Int64 // added to the member's clock
		cfg := e.config(1)
		cfg.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		ctx := ctxFor(t)
		e.write(t, coord.Join(configChangesPath, "config_change_0000000000"), `{"version":2,"entity_path":"topics/a"}`)
		e.write(t, coord.Join(configChangesPath, "other"), `x`)
		m, err := Join(ctx, e.factory, cfg)
		must(t, err)
		t.Cleanup(func() { _ = m.Close() })
		// The first reconciliation purges before electing: once the topic
		// is led, a purge ran and had to keep the young notification.
		must(t, m.CreateTopic(ctx, "a", 1, 1, nil))
		await(t, m, "a led", leadersAre("a", []int32{1}))
		if !e.exists(t, coord.Join(configChangesPath, "config_change_0000000000")) {
			t.Fatal("a young notification was purged")
		}
		skew.Store(int64(16 * time.Minute))
		must(t, m.CreateTopic(ctx, "b", 1, 1, nil)) // a change makes the controller reconcile
		testenv.WaitFor(t, waitTimeout, "expired notification purged", func() (bool, string) {
			return !e.exists(t, coord.Join(configChangesPath, "config_change_0000000000")), ""
		})
		if !e.exists(t, coord.Join(configChangesPath, "other")) {
			t.Error("a node that is no notification was purged")
		}
	})
}
