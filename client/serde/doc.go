// Package serde encodes and decodes Tributary payloads: Avro binary behind
// the Confluent schema-ID framing (package schema: 0x00, 4-byte big-endian
// schema id, Avro), with schemas registered in and fetched from the schema
// registry, so records interoperate with Confluent's serializers.
//
// A Serializer registers (or finds) a schema once per subject and caches the
// id and codec; subjects follow a SubjectNameStrategy, TopicNameStrategy by
// default ("<topic>-value", "<topic>-key"). A Deserializer fetches a
// writer schema by id once and caches it for good (ids are immutable); with
// a reader schema it converts values into the reader's shape by Avro's
// resolution rules (schema/avro.Resolver): defaults, promotions, enum
// defaults, union branches.
//
// Untrusted bytes never panic a Deserializer: the frame is checked, the
// payload is validated against the writer schema before goavro decodes it
// (goavro would allocate what a garbage block count asks for), and any
// goavro panic is recovered. Failures are classified by the sentinels of
// errors.go.
//
// Writer schemas with Confluent schema references are decoded when the
// Registry is a ReferenceRegistry (RegistryClient is): the referenced
// subject versions are fetched (and cached) depth first and their named
// types made known to the writer schema. Serializer registers schemas
// without references only.
//
// RegistryClient is the REST client of the registry (the Confluent API),
// caching ids and schemas; Serializer and Deserializer take any Registry.
// It sends basic authentication (ClientConfig.Username) and reaches an
// https registry with ClientConfig.TLS; ClientConfigFromProperties reads
// Confluent's client keys (basic.auth.credentials.source,
// basic.auth.user.info, schema.registry.ssl.*). A 401 or 403 answer is
// ErrAccessDenied.
//
// Concurrency: RegistryClient, Serializer and Deserializer are safe for
// concurrent use.
package serde
