// Package kafkatest holds Kafka-client helpers for tests: reading a topic
// to its end, as it stood when asked, without guessing the end from a
// quiet spell (which a loaded machine makes unreliable).
package kafkatest
