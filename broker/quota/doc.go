// Package quota is Kafka's client quotas (KIP-13, KIP-55, KIP-124):
// producer_byte_rate, consumer_byte_rate, request_percentage and
// controller_mutation_rate set on users, client ids and users' client
// ids, and their defaults; the store that keeps them, the precedence that
// picks a request's quota and the windowed rate that measures its usage.
// It has no network code: the broker (broker/clientquota.go) charges
// requests to it and throttles their connections.
//
// # Format (frozen: Kafka's, broker/entityconfig)
//
//	/config/users/<u>                  {"version":1,"config":{"producer_byte_rate":"1048576",...}}
//	/config/users/<u>/clients/<c>
//	/config/clients/<c>
//	/config/changes/config_change_<seq>  {"version":2,"entity_path":"users/<u>/clients/<c>"}
//
// with names sanitized (entityconfig.Sanitize) and a default entity named
// <default>. /config/users/<u> is shared with the user's SCRAM credentials
// (broker/sasl): Alter changes only the quota keys, in a compare-and-set,
// and readers ignore keys that are not quotas. Byte rates are written as
// whole numbers, the others as decimals; readers parse any number.
//
// # Precedence
//
// For a request of user u (the principal's name, ANONYMOUS without a
// login) and client id c, each key's quota is the first entity that sets
// it among: users/u/clients/c, users/u/clients/<default>, users/u,
// users/<default>/clients/c, users/<default>/clients/<default>,
// users/<default>, clients/c, clients/<default>. Usage is counted per
// Tags: the matched entity's parts, a default part standing for the
// request's own name, so clients matching users/u share one rate and each
// client id under clients/<default> has its own (Kafka's quota metric tags).
//
// # Measurement
//
// A Meter is Kafka's sampled Rate: quota.window.num samples of
// quota.window.size.seconds; the rate is the samples' sum over the time
// they span, taken as at least (num-1) windows. When a record takes the
// rate over the limit, the throttle is (rate-limit)/limit x span: the time
// the client must stay idle for the rate to fall back to the limit, capped
// at num windows.
//
// # Concurrency
//
// Store and Meter are safe for concurrent use; Store.Limit never blocks on
// the coordination service.
package quota
