// Package schema is the schema-ID wire format every Tributary payload uses,
// the framing of the Confluent Schema Registry serializers, so that records
// written by Confluent's Java, Go or Python serializers and by Tributary's
// serde are interchangeable:
//
//	byte 0      magic, always 0x00
//	bytes 1..4  schema id, unsigned 32-bit big-endian, as the registry assigned it
//	bytes 5..   the payload, Avro binary encoded with that schema
//
// The format is frozen: MagicByte and HeaderSize never change, because data
// already in topics and in HDFS carries them.
//
// Frame and Parse allocate nothing beyond the returned slice and are safe
// for concurrent use. Parse returns a payload that aliases its input.
//
// The Avro schema model (resolution rules, compatibility) is in
// schema/avro; the registry service in schema/registry.
package schema
