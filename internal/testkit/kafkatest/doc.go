// Package kafkatest holds Kafka-client helpers for tests, for any cluster
// reached by address (brokers of other processes too): reading a topic to
// its end, as it stood when asked, without guessing the end from a quiet
// spell (which a loaded machine makes unreliable), and creating a topic
// and waiting until every broker knows its leaders, and franz-go members
// of the KIP-848 consumer group protocol with the checks of their group.
package kafkatest
