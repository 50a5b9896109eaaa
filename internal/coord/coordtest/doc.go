// Package coordtest is the conformance suite every coord.Session
// implementation must pass: one body of tests, run against memcoord and
// against a real ZooKeeper through zkcoord, so that both keep ZooKeeper's
// semantics (versions, sequential names, ephemeral nodes, one-shot watches,
// atomic Multi, session expiry, path validation) and the election helper
// behaves the same on both.
//
// Each subtest opens its sessions through the connect function given to Run.
// Sessions opened with the same *testing.T must share one tree; different
// tests must see disjoint, initially empty trees (a fresh memcoord.Server, or
// a fresh ZooKeeper chroot). Every wait is bounded by Timeout.
package coordtest
