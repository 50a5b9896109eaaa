// Package checkpoint is MirrorMaker 2's checkpoint record
// (org.apache.kafka.connect.mirror.Checkpoint, connect-mirror-client),
// which the mirror writes to "<source>.checkpoints.internal" on the target
// so that Kafka's RemoteClusterUtils.translateOffsets, MirrorClient and
// other MirrorMaker 2-aware tools read our translations.
//
// # Format (frozen: MirrorMaker 2's version 0)
//
// Kafka protocol types, big-endian, STRING = int16 length + UTF-8:
//
//	key:   group STRING, topic STRING (the target topic), partition INT32
//	value: version INT16 (0), upstreamOffset INT64, offset INT64 (downstream), metadata STRING
//
// The functions are pure and safe for concurrent use.
package checkpoint
