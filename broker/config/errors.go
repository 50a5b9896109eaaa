package config

import "errors"

var (
	// ErrInvalidConfig marks a broker configuration value that cannot be
	// used; the message names the property key.
	ErrInvalidConfig = errors.New("broker: invalid configuration")
	// ErrInvalidTopicConfig marks a topic config override with an unknown
	// key or an invalid value; the message names the key, in Kafka's words.
	ErrInvalidTopicConfig = errors.New("broker: invalid topic config")
)
