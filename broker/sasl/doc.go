// Package sasl is the server side of SASL on the broker's Kafka-protocol
// connections: the mechanisms (PLAIN, RFC 4616; SCRAM-SHA-256 and
// SCRAM-SHA-512, RFC 5802/7677 with Kafka's extensions) and the stores of
// the credentials they check. It has no network code: the broker's
// SaslHandshake (API 17) and SaslAuthenticate (API 36) handlers are thin
// layers over it.
//
// # Contract
//
// An Authenticator is built per listener from a Config (FromProperties
// reads Kafka's keys, each also settable per listener with
// listener.name.<listener>.<key>):
//
//	sasl.enabled.mechanisms     PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
//	                            (default SCRAM-SHA-256,SCRAM-SHA-512)
//	sasl.plain.users.file       the PLAIN users (UsersFile); required with PLAIN
//	connections.max.reauth.ms   KIP-368 session lifetime; 0 (default): none
//
// Mechanisms lists what SaslHandshake answers; Start(mechanism) begins one
// login, and an unknown or disabled mechanism is ErrUnsupportedMechanism
// (UNSUPPORTED_SASL_MECHANISM). The Session's Step takes each client
// message and returns the server's; when done, Principal is
// "User:<name>" and Lifetime the session_lifetime_ms to return
// (SaslAuthenticate v1+), after which the client must re-authenticate
// with the same mechanism and principal (the handler compares them) or be
// disconnected. A refused login is an error wrapping
// ErrAuthenticationFailed (SASL_AUTHENTICATION_FAILED) whose message is
// Kafka's generic "Authentication failed during authentication due to
// invalid credentials with SASL mechanism <m>": the same for an unknown
// user as for a wrong password, and for SCRAM refused at the same step
// (the client-final message: an unknown user gets a decoy salt, stable per
// name, and keys no proof matches). Reason(err) says more, for the
// server's log. Step after the end is ErrIllegalState (ILLEGAL_SASL_STATE).
//
// PLAIN is one message, authzid NUL authcid NUL passwd; the authzid must
// be empty or the user. SCRAM's client-first message may carry Kafka's
// extensions after the nonce (n,,n=user,r=nonce,tokenauth=true); unknown
// extensions are ignored, as Kafka does, and tokenauth=true is refused,
// since there are no delegation tokens. Stored credentials with fewer than
// MinIterations (4096) iterations are refused. Passwords, salted
// passwords and comparisons: constant time (hmac.Equal, bcrypt).
//
// # Formats (frozen)
//
// SCRAM credentials live in the coordination service exactly as Kafka 2.8
// keeps them in ZooKeeper, so Kafka's `kafka-configs --zookeeper`
// creates users the brokers accept and sees the ones they create:
//
//	/config/users/<sanitized user>
//	    {"version":1,"config":{"SCRAM-SHA-256":"salt=<b64>,stored_key=<b64>,
//	     server_key=<b64>,iterations=<n>","SCRAM-SHA-512":"…", <other keys kept>}}
//	/config/changes/config_change_<seq>   (persistent sequential)
//	    {"version":2,"entity_path":"users/<sanitized user>"}
//
// The user's node name is Kafka's Sanitizer (URL encoding, '*' as %2A).
// A writer (UpdateUser, Kafka's ConfigCommand) writes the user node, then
// the notification; the notifications are purged by the controller
// (broker/cluster) after 15 minutes, as Kafka's brokers do.
//
// The PLAIN users file is UsersFile's: "<user>:<bcrypt hash>" or
// "<user>:SCRAM-SHA-256=<Kafka credential string>" lines, never a
// plaintext password.
//
// # Recovery and concurrency
//
// A CredentialStore keeps a cache of every user's SCRAM credentials: on
// each new session it arms a children watch on /config/changes, reads all
// of /config/users, then re-reads each user a newer notification names,
// so a user added or removed by any broker or tool takes effect on every
// broker without restart. When its session is lost it keeps serving the
// cache and reconnects. Lookup reads the cache and never blocks.
// UpdateUser compare-and-sets the user node (retrying on a concurrent
// write). A UsersFile is re-read when its stat changes (and by content
// while it is younger than the file system's timestamp granularity); a
// changed file that does not parse is logged and the old users kept.
//
// Authenticator, CredentialStore and UsersFile are safe for concurrent
// use; a Session belongs to one connection's goroutine.
package sasl
