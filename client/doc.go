// Package client is Tributary's Go client library, built on franz-go (kgo)
// for the Kafka wire protocol: a Producer, consumer groups coordinated
// through ZooKeeper as in the Kafka paper (§3.2) and Kafka 0.8, blocking
// message streams, rewind by offset or time, and a group-less Consumer.
//
// # Producer
//
// A Producer sends synchronously (Send), asynchronously with a callback
// (SendAsync) or a Future (SendFuture). kgo batches per partition (linger,
// batch size), retries, and writes idempotently by default (acks=all).
// Keys are partitioned exactly as the Java client's default partitioner
// does: toPositive(murmur2(key)) % numPartitions (Murmur2, KeyPartition),
// so a key lands in the same partition whichever client wrote it. Close
// flushes.
//
// # Consumer groups: the registries (frozen format, Kafka 0.8's layout)
//
//	/consumers/<group>/ids/<consumer>        ephemeral, {"version":1,"subscription":{"<topic>":<streams>},
//	                                         "pattern":"static","timestamp":"<unix ms>"}
//	/consumers/<group>/owners/<topic>/<p>    ephemeral, the owning consumer id
//	/consumers/<group>/offsets/<topic>/<p>   persistent, decimal next offset to consume
//
// # Rebalance (Algorithm 1)
//
// A member rebalances when it joins, and whenever a watch fires on the
// group's consumer registry (children of ids), the broker registry (children
// of /brokers/ids) or a subscribed topic's registry (/brokers/topics/<t>,
// data). Each attempt: read the consumer registry; read each topic's
// partitions; stop fetching, wait (up to rebalance.backoff.ms) for messages
// the application is handling, commit, release every owned partition
// (delete its owner node); sort partitions and consumer ids and take this
// member's range as Kafka's range assignor does (|P|/|C| each, the first
// |P| mod |C| members one more, so every partition has an owner); create
// the owner nodes. When one still exists (its previous owner has not
// released it yet), release everything and retry after rebalance.backoff.ms,
// up to rebalance.max.retries attempts; after that the failure is reported
// on every Stream and the member tries again a back-off later.
//
// Partition counts come from /brokers/topics/<topic> when that registry
// exists (a cluster registered in ZooKeeper). A single broker keeps no
// topic registry: then the count comes from the broker's metadata, and is
// re-read every GroupConfig.MetadataRefresh, since no watch reports a change.
//
// # Offsets and delivery
//
// A partition without a committed offset starts at auto.offset.reset
// (largest by default, or smallest), resolved with ListOffsets when it is
// claimed and committed with the next commit, so the group's start is
// pinned. A message counts as handled once the loop body it was handed to
// returns; commits (every auto.commit.interval.ms, on CommitOffsets, at each
// rebalance and at Close) write the offset after the last handled message
// of each owned partition, never beyond. Delivery is therefore
// at-least-once: after a crash, the new owner starts from the last commit,
// so it sees again what was handled since. Order is kept per partition.
//
// # Streams
//
// CreateMessageStreams(topic, n) returns n Streams; the member's partitions
// of the topic are spread round-robin over them in partition order, anew
// at each rebalance. A Stream is a range-over-func iterator that blocks
// until messages arrive and ends only when the consumer closes.
//
// # Sessions
//
// When the coordination session expires, the member's ephemeral nodes are
// gone and others may already own its partitions: it stops fetching without
// committing, opens a new session (GroupConfig.Coordinator or
// zookeeper.connect), registers again and rebalances. A rebalance that
// fails because the session is gone is not a rebalance failure: it does
// not count against rebalance.max.retries and no error reaches the
// streams; the recovery above follows.
//
// A registration already holding this member's consumer id is told apart
// by its data: one with this member's subscription (same topics, stream
// counts and pattern) is taken for this member's previous session, e.g. a
// process restarted with a fixed consumer.id right after a crash, and
// waited for, watching the node, until ZooKeeper expires it (at most
// zookeeper.session.timeout.ms plus 10 s); one with another subscription
// fails the join at once with ErrConsumerIDInUse.
//
// # Concurrency
//
// Producer, Consumer (except Poll/All, one goroutine) and GroupConsumer are
// safe for concurrent use; a Stream is iterated by one goroutine at a time.
// Rebalances, session recovery and seeks of one GroupConsumer run on one
// goroutine, one at a time.
package client
