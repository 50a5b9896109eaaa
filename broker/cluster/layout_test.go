package cluster

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

var fixedNow = func() time.Time { return time.UnixMilli(1700000000123) }

func TestNodeFormats(t *testing.T) {
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"broker", encodeBroker(Config{BrokerID: 1, Port: 9092, Now: fixedNow}),
			`{"version":5,"host":"127.0.0.1","port":9092,"endpoints":["PLAINTEXT://127.0.0.1:9092"],` +
				`"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"jmx_port":-1,"timestamp":"1700000000123","features":{}}`},
		{"broker with rack", encodeBroker(Config{BrokerID: 2, Host: "b2", Port: 19092, Rack: "r1", Now: fixedNow}),
			`{"version":5,"host":"b2","port":19092,"endpoints":["PLAINTEXT://b2:19092"],` +
				`"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"jmx_port":-1,"timestamp":"1700000000123","rack":"r1","features":{}}`},
		// Named listeners: host and port are the PLAINTEXT-protocol one's.
		{"named listeners", encodeBroker(Config{BrokerID: 3, Now: fixedNow,
			Endpoints: []string{"EXTERNAL://b3:9094", "INTERNAL://b3i:9093"},
			Protocols: map[string]string{"EXTERNAL": "SSL", "INTERNAL": "PLAINTEXT"}}),
			`{"version":5,"host":"b3i","port":9093,"endpoints":["EXTERNAL://b3:9094","INTERNAL://b3i:9093"],` +
				`"listener_security_protocol_map":{"EXTERNAL":"SSL","INTERNAL":"PLAINTEXT"},"jmx_port":-1,"timestamp":"1700000000123","features":{}}`},
		// No PLAINTEXT listener: host null and port -1, as Kafka writes.
		{"TLS only", encodeBroker(Config{BrokerID: 4, Now: fixedNow, Endpoints: []string{"SSL://b4:9093"}}),
			`{"version":5,"host":null,"port":-1,"endpoints":["SSL://b4:9093"],` +
				`"listener_security_protocol_map":{"SSL":"SSL"},"jmx_port":-1,"timestamp":"1700000000123","features":{}}`},
		{"controller", encodeController(3, fixedNow()), `{"version":1,"brokerid":3,"timestamp":"1700000000123"}`},
		{"assignment", encodeAssignment([][]int32{{1}, {2, 3}}, "RDoKZ8zTRqWx3s8oU6c4aA"),
			`{"version":3,"partitions":{"0":[1],"1":[2,3]},"adding_replicas":{},"removing_replicas":{},"topic_id":"RDoKZ8zTRqWx3s8oU6c4aA"}`},
		{"assignment without id", encodeAssignment([][]int32{{1}}, ""),
			`{"version":3,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{}}`},
		{"state", encodeState(stateRecord{ControllerEpoch: 4, Leader: 1, LeaderEpoch: 7, ISR: []int32{1}}),
			`{"controller_epoch":4,"leader":1,"version":1,"leader_epoch":7,"isr":[1]}`},
		{"state without isr", encodeState(stateRecord{ControllerEpoch: 1, Leader: -1}),
			`{"controller_epoch":1,"leader":-1,"version":1,"leader_epoch":0,"isr":[]}`},
		{"config", encodeConfig(map[string]string{"retention.ms": "1000"}), `{"version":1,"config":{"retention.ms":"1000"}}`},
		{"empty config", encodeConfig(nil), `{"version":1,"config":{}}`},
	} {
		if string(c.got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, c.got, c.want)
		}
	}
}

func TestDecodeKafkaWritten(t *testing.T) {
	// Shapes as Kafka 2.x writes them, with fields this package ignores.
	b, err := decodeBroker(5, []byte(`{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},`+
		`"endpoints":["PLAINTEXT://k5:9092"],"jmx_port":-1,"features":{},"host":"k5","timestamp":"1","port":9092,"version":5}`))
	if err != nil || !reflect.DeepEqual(b, Broker{ID: 5, Host: "k5", Port: 9092, Endpoints: []string{"PLAINTEXT://k5:9092"},
		Protocols: map[string]string{"PLAINTEXT": "PLAINTEXT"}}) {
		t.Errorf("broker: %+v, %v", b, err)
	}
	// No PLAINTEXT listener: host null, port -1; the endpoint stands in.
	b, err = decodeBroker(6, []byte(`{"endpoints":["SSL://k6:9093"],"host":null,"port":-1,"version":4,"jmx_port":-1,"timestamp":"1"}`))
	if err != nil || b.Host != "k6" || b.Port != 9093 {
		t.Errorf("ssl-only broker: %+v, %v", b, err)
	}
	// Kafka 2.8 with named listeners: every endpoint is kept and found by
	// listener name.
	b, err = decodeBroker(7, []byte(`{"features":{},"listener_security_protocol_map":{"INTERNAL":"SSL","EXTERNAL":"SASL_SSL"},`+
		`"endpoints":["INTERNAL://k7:9093","EXTERNAL://k7.example:9094"],"jmx_port":-1,"port":-1,"host":null,"version":5,"timestamp":"1"}`))
	if h, p, ok := b.Endpoint("EXTERNAL"); err != nil || !ok || h != "k7.example" || p != 9094 || b.Protocols["INTERNAL"] != "SSL" {
		t.Errorf("named listeners: %+v, %v (EXTERNAL %s:%d %v)", b, err, h, p, ok)
	}
	if _, _, ok := b.Endpoint("PLAINTEXT"); ok {
		t.Errorf("named listeners: a PLAINTEXT endpoint found in %v", b.Endpoints)
	}
	r, id, err := decodeAssignment("t", []byte(`{"version":2,"partitions":{"1":[3,1],"0":[1,2]},"adding_replicas":{},"removing_replicas":{}}`))
	if err != nil || !reflect.DeepEqual(r, [][]int32{{1, 2}, {3, 1}}) || id != "" {
		t.Errorf("assignment: %v, %q, %v", r, id, err)
	}
	// Kafka 2.8's TopicCommand --zookeeper (version 3, with the id when
	// the cluster uses ids), and its zero id, which means none.
	r, id, err = decodeAssignment("t", []byte(`{"version":3,"partitions":{"0":[1,2]},"adding_replicas":{},"removing_replicas":{},"topic_id":"h-aRhOLnTmqDUbtSNDDmYQ"}`))
	if err != nil || !reflect.DeepEqual(r, [][]int32{{1, 2}}) || id != "h-aRhOLnTmqDUbtSNDDmYQ" {
		t.Errorf("v3 assignment: %v, %q, %v", r, id, err)
	}
	if _, id, err = decodeAssignment("t", []byte(`{"version":3,"partitions":{"0":[1]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAA"}`)); err != nil || id != "" {
		t.Errorf("zero topic id: %q, %v", id, err)
	}
	s, err := decodeState([]byte(`{"controller_epoch":2,"leader":-1,"version":1,"leader_epoch":5,"isr":[1]}`))
	if err != nil || s.Leader != -1 || s.LeaderEpoch != 5 || s.ControllerEpoch != 2 || !reflect.DeepEqual(s.ISR, []int32{1}) {
		t.Errorf("state: %+v, %v", s, err)
	}
	if e, err := decodeEpoch([]byte("17")); e != 17 || err != nil {
		t.Errorf("epoch: %d, %v", e, err)
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
	}{
		{"gap", func() error {
			_, _, err := decodeAssignment("t", []byte(`{"version":1,"partitions":{"0":[1],"2":[1]}}`))
			return err
		}()},
		{"leading zero", func() error {
			_, _, err := decodeAssignment("t", []byte(`{"version":1,"partitions":{"00":[1]}}`))
			return err
		}()},
		{"no replicas", func() error {
			_, _, err := decodeAssignment("t", []byte(`{"version":1,"partitions":{"0":[]}}`))
			return err
		}()},
		{"repeated replica", func() error {
			_, _, err := decodeAssignment("t", []byte(`{"version":1,"partitions":{"0":[1,1]}}`))
			return err
		}()},
		{"not an object", func() error { _, _, err := decodeAssignment("t", []byte(`[1]`)); return err }()},
		{"bad leader", func() error { _, err := decodeState([]byte(`{"leader":-2,"isr":[]}`)); return err }()},
		{"broker without host", func() error { _, err := decodeBroker(1, []byte(`{"version":4}`)); return err }()},
		{"epoch", func() error { _, err := decodeEpoch([]byte("x")); return err }()},
		{"controller", func() error { _, err := decodeController([]byte("1")); return err }()},
	} {
		if !errors.Is(c.err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", c.name, c.err)
		}
	}
}

// FuzzDecode checks that no node content crashes the decoders and that
// whatever decodes re-encodes to the same value.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":1,"partitions":{"0":[1],"1":[2,3]}}`))
	f.Add([]byte(`{"version":3,"partitions":{"0":[1]},"adding_replicas":{"0":[2]},"removing_replicas":{},"topic_id":"RDoKZ8zTRqWx3s8oU6c4aA"}`))
	f.Add([]byte(`{"controller_epoch":4,"leader":1,"version":1,"leader_epoch":7,"isr":[1]}`))
	f.Add([]byte(`{"version":1,"config":{"a":"b"}}`))
	f.Add([]byte(`{"version":4,"host":"h","port":1,"endpoints":["PLAINTEXT://h:1"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, id, err := decodeAssignment("t", data); err == nil {
			again, againID, err := decodeAssignment("t", encodeAssignment(r, id))
			if err != nil || !reflect.DeepEqual(again, r) || againID != id {
				t.Fatalf("assignment round trip: %v %q -> %v %q, %v", r, id, again, againID, err)
			}
		}
		if rec, err := decodeTopic("t", data); err == nil {
			again, err := decodeTopic("t", encodeTopic(rec))
			rec.Version = topicFormatVersion
			if rec.AddingReplicas == nil {
				rec.AddingReplicas = map[string][]int32{}
			}
			if rec.RemovingReplicas == nil {
				rec.RemovingReplicas = map[string][]int32{}
			}
			if err != nil || !reflect.DeepEqual(again, rec) {
				t.Fatalf("topic node round trip: %+v -> %+v, %v", rec, again, err)
			}
		}
		if s, err := decodeState(data); err == nil {
			again, err := decodeState(encodeState(s))
			if s.ISR == nil {
				s.ISR = []int32{}
			}
			s.Version = stateFormatVersion
			if err != nil || !reflect.DeepEqual(again, s) {
				t.Fatalf("state round trip: %+v -> %+v, %v", s, again, err)
			}
		}
		if c, err := decodeConfig("t", data); err == nil {
			again, err := decodeConfig("t", encodeConfig(c))
			if err != nil || !reflect.DeepEqual(again, c) {
				t.Fatalf("config round trip: %v -> %v, %v", c, again, err)
			}
		}
		_, _ = decodeBroker(1, data)
		_, _ = decodeController(data)
		_, _ = decodeEpoch(data)
	})
}
