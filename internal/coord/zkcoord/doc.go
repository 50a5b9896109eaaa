// Package zkcoord implements coord.Session on a real ZooKeeper ensemble
// with Vitess's fork of go-zookeeper (github.com/z-division/go-zookeeper):
// go-zookeeper/zk v1.0.4 has a data race on Conn.lastZxid between its
// receive loop and the watch re-registration of a new connection (upstream
// PR zk#35, open), which failed -race test runs under load even on a
// session's first connection; the fork reads and writes it atomically. It is
// the product's coordination service;
// memcoord is its in-process stand-in, and both pass coordtest.
//
// Connect string: Kafka's zookeeper.connect form, "h1:2181,h2:2181/chroot".
// The chroot is created (like mkdir -p) when missing; every path a caller
// passes is relative to it and every path returned (sequential names, watch
// events) has it stripped, as the Java client does.
//
// Sessions: Connect waits up to Config.ConnectionTimeout for a session and
// fails with an error wrapping coord.ErrUnavailable naming the servers. A
// dropped connection is retried by the client within the session timeout,
// keeping ephemeral nodes and watches (States reports StateDisconnected and
// then StateConnected). When the server reports the session expired, the
// Session delivers StateExpired, fires every pending watch with
// EventSessionLost and fails every later call with coord.ErrSessionExpired;
// it never silently continues on a new session (go-zookeeper would), because
// its owner must register its ephemeral nodes again: the owner Connects anew.
//
// Security: with Config.DigestAuth the session authenticates with the
// digest scheme on every connection; with Config.SetACL (Kafka's
// zookeeper.set.acl) nodes it creates carry ACLs: all permissions for
// that identity and read for the world, or, at and under
// Config.SensitivePaths, for that identity alone (Kafka keeps
// /config/users so). Existing nodes keep their ACLs; the chroot's own
// nodes are open.
//
// Retries: reads (Get, Exists, Children and their W forms) are retried
// across connection loss until their context ends. Writes are retried only
// when the request provably never reached a server; a write cut off in flight
// fails with an error wrapping coord.ErrUnavailable whose outcome is unknown,
// and the caller decides (re-read, or retry with a version check).
//
// Concurrency: a Session is safe for concurrent use. Calls honour their
// context; a call abandoned by its context may still take effect on the
// server, as with any ZooKeeper client.
package zkcoord
