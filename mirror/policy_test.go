package mirror

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/mirror/origin"
)

// TestReplicationPolicies: MirrorMaker 2's class names and separator, the
// cycle rule of the default policy, the internal topics never mirrored,
// and the config errors naming their keys.
func TestReplicationPolicies(t *testing.T) {
	cfgOf := func(kv ...string) (Config, error) {
		props := validProps()
		delete(props, "topic.rename")
		props["target.name"] = "dc2"
		for i := 0; i < len(kv); i += 2 {
			props[kv[i]] = kv[i+1]
		}
		c, _, err := ConfigFromProperties(props)
		if err == nil {
			err = c.Validate()
		}
		return c.withDefaults(), err
	}
	def, err := cfgOf("replication.policy.class", DefaultReplicationPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if got := def.targetTopic("dc1", "pageviews"); got != "dc1.pageviews" {
		t.Errorf("default policy: %q", got)
	}
	if got := def.CheckpointsTopic("dc1"); got != "dc1.checkpoints.internal" {
		t.Errorf("checkpoints topic %q", got)
	}
	if !def.checkpoints() {
		t.Error("checkpoints are off by default under a replication policy")
	}
	for topic, cycle := range map[string]bool{"dc2.pageviews": true, "dc3.dc2.pageviews": true, "dc1.pageviews": false, "pageviews": false, "dc3.x.y": false} {
		if got := def.isCycle(topic); got != cycle {
			t.Errorf("isCycle(%q) = %v, want %v", topic, got, cycle)
		}
	}
	for topic, internal := range map[string]bool{"dc1.checkpoints.internal": true, OffsetSyncsTopic: true, "mm2-offset-syncs.dc2.internal": true,
		"x-internal": true, ".hidden": true, "pageviews": false} {
		if got := def.internalTopic(topic); got != internal {
			t.Errorf("internalTopic(%q) = %v, want %v", topic, got, internal)
		}
	}
	sep, err := cfgOf("replication.policy.class", DefaultReplicationPolicy, "replication.policy.separator", "_")
	if err != nil {
		t.Fatal(err)
	}
	if sep.targetTopic("dc1", "a.b") != "dc1_a.b" || !sep.isCycle("dc2_a.b") || sep.isCycle("dc2.a") || sep.CheckpointsTopic("dc1") != "dc1_checkpoints_internal" {
		t.Errorf("separator _: %q %v", sep.targetTopic("dc1", "a.b"), sep.isCycle("dc2_a.b"))
	}
	id, err := cfgOf("replication.policy.class", IdentityReplicationPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if id.targetTopic("dc1", "pageviews") != "pageviews" || id.isCycle("dc2.pageviews") {
		t.Error("identity policy renames or sees a cycle")
	}
	rename, err := cfgOf()
	if err != nil {
		t.Fatal(err)
	}
	if rename.targetTopic("dc1", "x") != "x" || rename.checkpoints() || rename.internalTopic("x.internal") {
		t.Error("topic.rename default changed")
	}

	// A record whose origin is the target is never mirrored back, under any policy.
	from := func(src string) []kgo.RecordHeader {
		return []kgo.RecordHeader{{Key: "a"}, {Key: origin.Header, Value: origin.Append(nil, src, 1, 2)}}
	}
	for _, c := range []Config{def, id, rename} {
		if !c.looped(from("dc2")) || c.looped(from("dc1")) || c.looped(nil) {
			t.Errorf("%q: looped wrong", c.ReplicationPolicy)
		}
	}

	for _, bad := range []struct {
		kv   []string
		want string
	}{
		{[]string{"replication.policy.class", DefaultReplicationPolicy, "topic.rename", "${source}.${topic}"}, "topic.rename and replication.policy.class"},
		{[]string{"replication.policy.class", "com.example.Mine"}, "replication.policy.class"},
		{[]string{"replication.policy.separator", "_"}, "replication.policy.separator"},
		{[]string{"groups", "("}, "groups"},
		{[]string{"sync.group.offsets.enabled", "true"}, "sync.group.offsets.enabled"},
		{[]string{"emit.checkpoints.interval.seconds", "0"}, "emit.checkpoints.interval.seconds"},
	} {
		if _, err := cfgOf(bad.kv...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: err %v, want one naming %s", bad.kv, err, bad.want)
		}
	}
}
