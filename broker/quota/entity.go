package quota

import (
	"fmt"
	"math"
	"strings"

	"github.com/tributary/tributary/broker/entityconfig"
)

// The quota keys (frozen: Kafka's names, KIP-13, KIP-55, KIP-124, KIP-599).
const (
	// ProducerByteRate is produce request bytes per second.
	ProducerByteRate = "producer_byte_rate"
	// ConsumerByteRate is fetch response bytes per second.
	ConsumerByteRate = "consumer_byte_rate"
	// RequestPercentage is request handler time per quota window, in
	// percent of one thread (100 = one thread's whole time).
	RequestPercentage = "request_percentage"
	// ControllerMutationRate is partitions created or deleted per second.
	ControllerMutationRate = "controller_mutation_rate"
)

// Keys are the quota keys, in the order Describe lists them.
var Keys = []string{ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate}

// IsKey reports whether key is a quota key.
func IsKey(key string) bool {
	for _, k := range Keys {
		if k == key {
			return true
		}
	}
	return false
}

// longKey reports whether key's values are whole numbers (Kafka's LONG
// config type).
func longKey(key string) bool { return key == ProducerByteRate || key == ConsumerByteRate }

// ValidateValue checks a value for key as Kafka does: a known key, not
// negative, a whole number for the byte rates.
func ValidateValue(key string, v float64) error {
	switch {
	case !IsKey(key):
		return fmt.Errorf("%w: %s", ErrUnknownKey, key)
	case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
		return fmt.Errorf("%w: %s must be a non-negative number, got %v", ErrBadValue, key, v)
	case longKey(key) && (v != math.Trunc(v) || v > math.MaxInt64):
		return fmt.Errorf("%w: %s must be a Long value, got %v", ErrBadValue, key, v)
	}
	return nil
}

// Name is one part of an entity: absent, the default (<default>, a null
// name on the wire), or a name.
type Name struct {
	Set     bool
	Default bool
	Value   string
}

// Named is Name{Set: true, Value: v}.
func Named(v string) Name { return Name{Set: true, Value: v} }

// DefaultName is the default entity of its type.
var DefaultName = Name{Set: true, Default: true}

func (n Name) node() string {
	if n.Default {
		return entityconfig.DefaultEntity
	}
	return entityconfig.Sanitize(n.Value)
}

func (n Name) String() string {
	switch {
	case !n.Set:
		return ""
	case n.Default:
		return entityconfig.DefaultEntity
	}
	return n.Value
}

func parseName(node string) (Name, error) {
	if node == entityconfig.DefaultEntity {
		return DefaultName, nil
	}
	v, err := entityconfig.Desanitize(node)
	if err != nil {
		return Name{}, err
	}
	return Named(v), nil
}

// Entity is what a quota is set on: a user, a client id, or a user's
// client id; either part may be its type's default.
type Entity struct {
	User, Client Name
}

// Valid reports whether e has at least one part.
func (e Entity) Valid() bool { return e.User.Set || e.Client.Set }

// Path is e's entity path (entityconfig): "users/<u>", "clients/<c>" or
// "users/<u>/clients/<c>".
func (e Entity) Path() string {
	switch {
	case e.User.Set && e.Client.Set:
		return "users/" + e.User.node() + "/clients/" + e.Client.node()
	case e.User.Set:
		return "users/" + e.User.node()
	}
	return "clients/" + e.Client.node()
}

func (e Entity) String() string { return e.Path() }

// ParsePath is the inverse of Path; ok is false for paths of other entity
// types (topics, brokers) and malformed names.
func ParsePath(path string) (e Entity, ok bool) {
	parts := strings.Split(path, "/")
	var err error
	switch {
	case len(parts) == 2 && parts[0] == "users" && parts[1] != "":
		e.User, err = parseName(parts[1])
	case len(parts) == 2 && parts[0] == "clients" && parts[1] != "":
		e.Client, err = parseName(parts[1])
	case len(parts) == 4 && parts[0] == "users" && parts[2] == "clients" && parts[1] != "" && parts[3] != "":
		e.User, err = parseName(parts[1])
		if err == nil {
			e.Client, err = parseName(parts[3])
		}
	default:
		return Entity{}, false
	}
	return e, err == nil
}

// Tags are the user and client id a quota's usage is counted under, as
// Kafka's quota metric tags: the matched entity's named parts, with a
// default part replaced by the request's own name, so that clients sharing
// a quota entity share its usage, and clients under a default each have
// their own.
type Tags struct{ User, Client string }

// levels are KIP-55's precedence, most specific first: for a request of
// user u and client c, the first of these entities with a value for the
// key gives the quota.
func levels(user, client string) [8]Entity {
	u, c := Named(user), Named(client)
	return [8]Entity{
		{User: u, Client: c},
		{User: u, Client: DefaultName},
		{User: u},
		{User: DefaultName, Client: c},
		{User: DefaultName, Client: DefaultName},
		{User: DefaultName},
		{Client: c},
		{Client: DefaultName},
	}
}

// tagsOf is the usage tags of a request (user, client) whose quota comes
// from e.
func tagsOf(e Entity, user, client string) Tags {
	var t Tags
	if e.User.Set {
		t.User = user
	}
	if e.Client.Set {
		t.Client = client
	}
	return t
}
