// Package link is a TCP proxy on loopback that stands for a network link
// between datacenters: a Link forwards any number of listening ports, each
// to its own upstream (one per broker, so that the brokers can advertise
// the proxy's ports), and can cut the link, add latency and cap its
// bandwidth while connections run.
//
// # Faults
//
//   - Cut closes every forwarded connection and holds new ones open without
//     forwarding a byte (a partition, not a refusal: clients see timeouts)
//     until Restore.
//   - SetLatency delays every chunk of bytes, each direction, by the given
//     time after it was read (a one-way delay, so a round trip gains twice
//     it); bytes keep their order.
//   - SetBandwidth caps each direction of the whole link to the given bytes
//     per second (0: no cap).
//
// A Proxy with several upstreams (NewPool) dials them in turn, skipping one
// that refuses: a small load balancer in front of replicated HTTP services
// (the schema registries).
//
// # Concurrency
//
// A Link's and a Proxy's methods are safe for concurrent use. Close stops
// every listener and connection.
package link
