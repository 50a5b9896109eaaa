// Package entityconfig owns Kafka's entity config nodes and their change
// notifications in the coordination service, as Kafka 2.8 keeps them in
// ZooKeeper, so that Kafka's ConfigCommand (`kafka-configs --zookeeper`)
// and our brokers read and write the same nodes. SCRAM credentials
// (broker/sasl), client quotas (broker/quota) and dynamic broker configs
// (broker/cluster) all write through it.
//
// # Formats (frozen: Kafka's)
//
//	/config/<entity path>                 {"version":1,"config":{"<key>":"<value>",...}}
//	/config/changes/config_change_<seq>   {"version":2,"entity_path":"<entity path>"}
//
// where an entity path is "topics/<t>", "brokers/<id>|<default>",
// "users/<u>", "clients/<c>" or "users/<u>/clients/<c>", each name
// sanitized with Sanitize (Kafka's Sanitizer: URL encoding, '*' as %2A) and
// a default entity written as DefaultEntity ("<default>").
//
// # Contract
//
// Update is a compare-and-set on one entity node, redone on top of any
// concurrent write, so that writers of different keys of one node (SCRAM
// credentials and quotas share /config/users/<u>) never drop each other's
// keys; it is followed by Notify. Follow is the reader's side: it arms a
// watch on /config/changes, loads everything once, and then reports each
// newer notification in sequence order; notifications older than the load
// are covered by it. Notifications are purged by the controller
// (broker/cluster) after 15 minutes. All functions are safe for concurrent
// use on one session.
package entityconfig
