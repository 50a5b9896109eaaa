// Package zktest gives each test that runs against the real test ZooKeeper
// a namespace of its own: a fresh random chroot, whose whole tree is
// removed when the test ends, so tests sharing one server never see each
// other's nodes and leave nothing behind.
package zktest
