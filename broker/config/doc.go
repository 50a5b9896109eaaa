// Package config is the broker's configuration: the server.properties
// keys, under Kafka's own names, and the topic-level configs.
//
// # Broker configuration
//
// Config holds every static setting of a broker; its fields name the key
// that sets them (log.segment.bytes, log.retention.hours, listeners,
// min.insync.replicas, ...). The zero value of every field means Kafka's
// default (LogDirs, which is required, aside): WithDefaults fills them in,
// and a boolean whose Kafka default is true is stored negated
// (DisableAutoCreateTopics, NoControlledShutdown) so that its zero value is
// that default. The feature groups have their own structs beside Config:
// Replication (replica.*, min.insync.replicas, controlled.shutdown.*),
// Cleaner (log.cleaner.*), SASL and ZooKeeperAuth, Authorizer, Limits
// (connections, open files, controller.mutation.rate) and Audit
// (audit.topic.*); the coordinators' keys fill broker/group.Config and
// broker/txn.Config.
//
// FromProperties (and ParseProperties for a file) is the one reader of
// server.properties: it returns warnings for unknown keys and an error
// naming every invalid value. A key given is taken literally, so a 0 where
// 0 is not allowed is refused, never read as the default; Kafka's
// "unlimited" spellings (Long.MAX_VALUE, Int.MaxValue) map to zero. Each
// file keeps its keys' setters beside its fields; one table
// (propertySetters) holds them all, and SetProperty applies one key, for
// the dynamic broker configs.
//
// Validate checks the configuration after defaults, with the cross-field
// rules (a TLS listener needs a key pair, replica.fetch.wait.max.ms must
// not exceed replica.lag.time.max.ms, a SASL inter-broker listener needs
// the broker's credentials, ...). Every error wraps ErrInvalidConfig and
// names the key.
//
// # Topic configuration
//
// Topic is one topic's effective configuration: the broker's defaults
// (Config.TopicDefaults) overridden by the topic's entries of
// /config/topics/<topic> (ResolveTopic). TopicKeys lists the topic-level
// keys the broker applies, each with its broker synonym, type, Kafka
// default and renderer, as CreateTopics, DescribeConfigs and the alter
// APIs need them; any other key is refused with ErrInvalidTopicConfig.
// LogSettings, the part of a Topic fixed when a partition's log is opened,
// is comparable: a change reopens the log.
//
// # Concurrency
//
// Everything here is values and pure functions; a Config is copied, never
// shared mutably. The tables are built once at package initialisation and
// only read after.
package config
