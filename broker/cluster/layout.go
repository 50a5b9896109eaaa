package cluster

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// Node paths of the Kafka 0.8 layout; frozen, Kafka-era tools read them.
const (
	brokerIDsPath       = "/brokers/ids"
	topicsPath          = "/brokers/topics"
	controllerPath      = "/controller"
	controllerEpochPath = "/controller_epoch"
	topicConfigsPath    = "/config/topics"
	deleteTopicsPath    = "/admin/delete_topics"
	configChangesPath   = "/config/changes"
	brokerConfigsPath   = "/config/brokers"
)

// DefaultBrokerEntity names the cluster-wide dynamic broker defaults,
// /config/brokers/<default>; a broker's own overrides are under its id.
// Frozen by Kafka.
const DefaultBrokerEntity = "<default>"

// JSON format versions written into the nodes; frozen.
const (
	brokerFormatVersion     = 5 // Kafka 2.8's: listener_security_protocol_map and features
	controllerFormatVersion = 1
	topicFormatVersion      = 3 // Kafka 2.8's: with adding/removing replicas and topic_id
	stateFormatVersion      = 1
	configFormatVersion     = 1
)

// consumersPath is the paper's consumer registry root. Members do not use
// it, but Kafka's brokers create it at start and Kafka-era tools expect it:
// Burrow lists it once when it starts and never again if it is missing.
const consumersPath = "/consumers"

// persistentRoots are created at Join so that children watches can be set
// (and, for consumersPath, so that tools find it).
var persistentRoots = []string{brokerIDsPath, topicsPath, topicConfigsPath, deleteTopicsPath, consumersPath, brokerConfigsPath}

func brokerPath(id int32) string { return coord.Join(brokerIDsPath, strconv.Itoa(int(id))) }
func topicPath(t string) string  { return coord.Join(topicsPath, t) }
func partitionsPath(t string) string {
	return coord.Join(topicsPath, t, "partitions")
}
func partitionPath(t string, p int32) string {
	return coord.Join(topicsPath, t, "partitions", strconv.Itoa(int(p)))
}
func statePath(t string, p int32) string {
	return coord.Join(topicsPath, t, "partitions", strconv.Itoa(int(p)), "state")
}
func topicConfigPath(t string) string       { return coord.Join(topicConfigsPath, t) }
func brokerConfigPath(entity string) string { return coord.Join(brokerConfigsPath, entity) }
func deleteTopicPath(t string) string       { return coord.Join(deleteTopicsPath, t) }

// millis renders a time as Kafka does in its nodes: decimal milliseconds in
// a JSON string.
func millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// brokerRecord is /brokers/ids/<id>. host and port are the endpoint of the
// first PLAINTEXT-protocol listener, null and -1 without one, as Kafka
// writes them; endpoints name listeners, and the map gives each its
// protocol (a name missing from it is a protocol name).
type brokerRecord struct {
	Version     int               `json:"version"`
	Host        *string           `json:"host"`
	Port        int32             `json:"port"`
	Endpoints   []string          `json:"endpoints"`
	ProtocolMap map[string]string `json:"listener_security_protocol_map,omitempty"`
	JMXPort     int               `json:"jmx_port"`
	Timestamp   string            `json:"timestamp"`
	Rack        string            `json:"rack,omitempty"`
	Features    map[string]any    `json:"features"`
}

func encodeBroker(cfg Config) []byte {
	r := registrationOf(cfg)
	r.Timestamp = millis(cfg.now())
	return mustJSON(r)
}

// registrationOf is what cfg registers, but for the timestamp.
func registrationOf(cfg Config) brokerRecord {
	r := brokerRecord{
		Version:     brokerFormatVersion,
		Port:        -1,
		Endpoints:   cfg.endpoints(),
		ProtocolMap: cfg.protocolMap(),
		JMXPort:     -1,
		Rack:        cfg.Rack,
		Features:    map[string]any{},
	}
	for _, ep := range r.Endpoints {
		name, h, p, err := parseEndpoint(ep)
		if err == nil && protocolOf(r.ProtocolMap, name) == "PLAINTEXT" {
			r.Host, r.Port = &h, p
			break
		}
	}
	return r
}

// protocolOf is a listener's security protocol by the registration's map.
func protocolOf(m map[string]string, listener string) string {
	if p, ok := m[listener]; ok {
		return p
	}
	return listener
}

// decodeBroker parses a registration. Kafka writes host null and port -1
// when there is no PLAINTEXT listener; the first endpoint stands in then.
func decodeBroker(id int32, data []byte) (Broker, error) {
	var r brokerRecord
	if err := strictJSON(data, &r); err != nil {
		return Broker{}, fmt.Errorf("%w: broker %d: %w", ErrMalformed, id, err)
	}
	b := Broker{ID: id, Port: r.Port, Rack: r.Rack, Endpoints: r.Endpoints, Protocols: r.ProtocolMap}
	if r.Host != nil {
		b.Host = *r.Host
	}
	if (b.Host == "" || b.Port < 0) && len(r.Endpoints) > 0 {
		if _, h, p, err := parseEndpoint(r.Endpoints[0]); err == nil {
			b.Host, b.Port = h, p
		}
	}
	if b.Host == "" {
		return Broker{}, fmt.Errorf("%w: broker %d has no host", ErrMalformed, id)
	}
	return b, nil
}

// controllerRecord is /controller.
type controllerRecord struct {
	Version   int    `json:"version"`
	BrokerID  int32  `json:"brokerid"`
	Timestamp string `json:"timestamp"`
}

func encodeController(id int32, now time.Time) []byte {
	return mustJSON(controllerRecord{Version: controllerFormatVersion, BrokerID: id, Timestamp: millis(now)})
}

func decodeController(data []byte) (int32, error) {
	var r controllerRecord
	if err := strictJSON(data, &r); err != nil {
		return -1, fmt.Errorf("%w: controller: %w", ErrMalformed, err)
	}
	return r.BrokerID, nil
}

// decodeEpoch parses /controller_epoch, a bare decimal.
func decodeEpoch(data []byte) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: controller epoch %q", ErrMalformed, data)
	}
	return int32(n), nil
}

// topicRecord is /brokers/topics/<topic>: partition id (decimal) to
// replicas, and since version 3 (Kafka 2.8) the topic id. The reassignment
// maps (version 2, Kafka 2.4) are kept as read, so that a rewrite by the
// controller does not drop a reassignment another tool has in progress.
type topicRecord struct {
	Version          int                `json:"version"`
	Partitions       map[string][]int32 `json:"partitions"`
	AddingReplicas   map[string][]int32 `json:"adding_replicas"`
	RemovingReplicas map[string][]int32 `json:"removing_replicas"`
	TopicID          string             `json:"topic_id,omitempty"`
}

// encodeAssignment renders a new topic's node, as Kafka 2.8 does:
// {"version":3,"partitions":{...},"adding_replicas":{},"removing_replicas":{},"topic_id":"..."}.
func encodeAssignment(replicas [][]int32, id string) []byte {
	r := topicRecord{Version: topicFormatVersion, Partitions: make(map[string][]int32, len(replicas)), TopicID: id}
	for p, rs := range replicas {
		r.Partitions[strconv.Itoa(p)] = rs
	}
	return encodeTopic(r)
}

// encodeTopic writes r as version 3; encoding/json sorts map keys, so the
// bytes are stable.
func encodeTopic(r topicRecord) []byte {
	r.Version = topicFormatVersion
	if r.AddingReplicas == nil {
		r.AddingReplicas = map[string][]int32{} // Kafka writes {} rather than leave them out
	}
	if r.RemovingReplicas == nil {
		r.RemovingReplicas = map[string][]int32{}
	}
	return mustJSON(r)
}

// decodeTopic parses a topic node of any version (1: Kafka 0.8, 2: 2.4,
// 3: 2.8). A topic_id that is not a valid topic id makes the node malformed
// (Kafka's own reader would fail on it too); an absent or all-zero one
// (Kafka's "no id") reads as "".
func decodeTopic(topic string, data []byte) (topicRecord, error) {
	var r topicRecord
	if err := strictJSON(data, &r); err != nil {
		return topicRecord{}, fmt.Errorf("%w: topic %s: %w", ErrMalformed, topic, err)
	}
	if r.TopicID == zeroTopicID {
		r.TopicID = ""
	}
	if r.TopicID != "" && !ValidTopicID(r.TopicID) {
		return topicRecord{}, fmt.Errorf("%w: topic %s: topic_id %.40q is not a URL-safe base64 UUID", ErrMalformed, topic, r.TopicID)
	}
	return r, nil
}

// decodeAssignment returns the replica lists indexed by partition id and
// the topic id ("" when the node has none). The ids must be exactly
// 0..N-1, each with a non-empty list of distinct ids.
func decodeAssignment(topic string, data []byte) ([][]int32, string, error) {
	r, err := decodeTopic(topic, data)
	if err != nil {
		return nil, "", err
	}
	out := make([][]int32, len(r.Partitions))
	for key, rs := range r.Partitions {
		p, err := strconv.Atoi(key)
		if err != nil || p < 0 || p >= len(out) || strconv.Itoa(p) != key {
			return nil, "", fmt.Errorf("%w: topic %s: partition ids are not 0..%d (found %q)",
				ErrMalformed, topic, len(out)-1, key)
		}
		if len(rs) == 0 {
			return nil, "", fmt.Errorf("%w: topic %s partition %d has no replicas", ErrMalformed, topic, p)
		}
		sorted := slices.Sorted(slices.Values(rs))
		if len(slices.Compact(sorted)) != len(rs) {
			return nil, "", fmt.Errorf("%w: topic %s partition %d repeats a replica: %v", ErrMalformed, topic, p, rs)
		}
		out[p] = slices.Clone(rs)
	}
	return out, r.TopicID, nil
}

// stateRecord is /brokers/topics/<topic>/partitions/<p>/state.
type stateRecord struct {
	ControllerEpoch int32   `json:"controller_epoch"`
	Leader          int32   `json:"leader"`
	Version         int     `json:"version"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	ISR             []int32 `json:"isr"`
}

func encodeState(s stateRecord) []byte {
	s.Version = stateFormatVersion
	if s.ISR == nil {
		s.ISR = []int32{} // Kafka's readers expect a list, never null
	}
	return mustJSON(s)
}

func decodeState(data []byte) (stateRecord, error) {
	var s stateRecord
	if err := strictJSON(data, &s); err != nil {
		return stateRecord{}, fmt.Errorf("%w: partition state: %w", ErrMalformed, err)
	}
	if s.Leader < -1 {
		return stateRecord{}, fmt.Errorf("%w: partition state: leader %d", ErrMalformed, s.Leader)
	}
	return s, nil
}

// configRecord is /config/topics/<topic>. It holds configs only: Kafka's
// ConfigCommand validates every key it finds there against Kafka's topic
// configs, so nothing else may be stored in it.
type configRecord struct {
	Version int               `json:"version"`
	Config  map[string]string `json:"config"`
}

func encodeConfig(configs map[string]string) []byte {
	if configs == nil {
		configs = map[string]string{}
	}
	return mustJSON(configRecord{Version: configFormatVersion, Config: configs})
}

func decodeConfig(topic string, data []byte) (map[string]string, error) {
	var r configRecord
	if err := strictJSON(data, &r); err != nil {
		return nil, fmt.Errorf("%w: config of %s: %w", ErrMalformed, topic, err)
	}
	if r.Config == nil {
		r.Config = map[string]string{}
	}
	return r.Config, nil
}

// strictJSON decodes one JSON object; unknown fields are fine (later Kafka
// versions add some) but trailing garbage and non-objects are not.
func strictJSON(data []byte, v any) error {
	s := strings.TrimSpace(string(data))
	if !strings.HasPrefix(s, "{") {
		return fmt.Errorf("not a JSON object: %.40q", data)
	}
	return json.Unmarshal(data, v)
}

// mustJSON marshals the records above, which cannot fail to encode.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("cluster: encoding %T: %v", v, err))
	}
	return b
}
