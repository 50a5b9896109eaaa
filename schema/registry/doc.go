// Package registry is Tributary's schema registry: the Confluent Schema
// Registry REST API (so Confluent serializers work unchanged), the
// compatibility levels built on schema/avro's resolution rules, and the
// stores behind it.
//
// # API
//
// Registry.Handler serves GET /, the /subjects, /schemas, /compatibility,
// /config and /mode endpoints with Confluent's bodies, content types
// (application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json,
// application/json) and errors: {"error_code": N, "message": "..."} with
// 40401..40409, 409, 42201..42207 and 50001 and their HTTP statuses (the
// table is in apierror.go). Only AVRO schemas are accepted.
//
// Compatibility checks answer as Confluent 7.x does:
// POST /compatibility/subjects/{s}/versions/{v|latest} tests against that
// one live version (latest: the newest, whatever the level's _TRANSITIVE),
// POST /compatibility/subjects/{s}/versions against every version the level
// names, as a registration would. A subject without live versions (never
// registered, or all soft-deleted) is compatible with latest and with all
// (Confluent 5.x answered 40401; 7.x changed it on purpose), and has no
// version N: 404 40402 "Version N not found.". ?verbose=true adds
// "messages" (the problems found) and answers a schema that does not parse
// with is_compatible false and the parse error instead of 42201.
//
// Schema references: a schema may use the named types of other subjects'
// versions, listed as Confluent's "references" [{name, subject, version}]
// (version -1 means the latest, stored as its number). The referenced types
// are inlined at first use to build the codec (schema/avro
// ParseWithReferences). A version that any version (soft-deleted ones
// included) refers to cannot be deleted (42206); .../referencedby lists the
// referring ids.
//
// Schema ids are global: one schema identity has one id across all
// subjects. The identity is the Avro Parsing Canonical Form (referenced
// types inlined), compared by SHA-256, plus the references when there are
// any. ?normalize=true on registration stores the canonical form instead of
// the text given (schemas without references); lookups always compare
// canonical forms.
//
// Modes (/mode, /mode/{subject}): READWRITE (default); READONLY refuses
// registrations and deletes (42205); IMPORT requires registrations to name
// their id (and optionally version), skips compatibility checks, and may be
// set only on a subject without live versions (or globally on an empty
// registry) unless ?force=true. Ids handed out afterwards follow the
// highest imported id. Registering a
// schema identical to a live version returns that version's id. A soft
// delete hides a version unless ?deleted=true; a permanent delete needs a
// soft delete first. A schema stays readable by id after its versions are
// deleted, so old data can still be decoded.
//
// # Stores
//
// MemStore keeps everything in memory (one process, not durable).
// CoordStore keeps it in the coordination service, normally ZooKeeper,
// under RootPath (frozen layout):
//
//	/schema_registry/id_counter                           last id, decimal; compare-and-set incremented
//	/schema_registry/schemas/<id>                         immutable JSON {id, schema, schemaType, fingerprint}
//	/schema_registry/fingerprints/<sha256>                id, decimal; created with the schema in one multi-op
//	/schema_registry/subjects/<subject>/versions/<n>      JSON {id, deleted}
//	/schema_registry/config                               global level JSON {compatibilityLevel}, empty if unset
//	/schema_registry/config/<subject>                     subject level JSON
//	/schema_registry/mode                                 global mode JSON {mode}, empty if unset
//	/schema_registry/mode/<subject>                       subject mode JSON
//
// A schema node's JSON also holds "references" when the schema has any.
// An import raises id_counter to the imported id before creating the
// schema node, and PutSchema skips an id whose node an import created.
//
// Subject names are path-escaped into one node name. Any number of
// processes share one tree: ids come from the CAS counter, so two never
// hand out the same id; the fingerprint node is created together with the
// schema node, so two processes registering one schema concurrently agree
// on one id (the loser's allocated id is a gap). Version numbers are claimed
// by creating the version node; a process that loses the race re-reads the
// subject and checks compatibility again.
//
// Each CoordStore serves schemas from a cache filled on first read and kept
// forever (ids are immutable), and subjects and versions from a cache kept
// fresh by watches: ChildrenW on subjects/ and on each subject's versions/,
// and GetW on each subject node, which a soft delete touches in the same
// multi-op as the version's flag. A process sees its own writes at once and
// other processes' after the watch round trip. Compatibility levels and modes
// are read from the tree on use, so a change holds at once everywhere. If the
// session expires, the store fails every call with ErrStore: its owner must
// open a new session and a new store (`tributary registry` exits so that its
// supervisor restarts it).
//
// # Server configuration
//
// ServerConfigFromProperties reads registry.properties with Confluent's
// key names: listeners (one, http:// or https://), the ssl.* and
// authentication.* keys of internal/network's HTTPConfigFromProperties,
// schema.compatibility.level and zookeeper.connect (Tributary's store).
// Need says what each request needs: GETs, lookups and compatibility checks
// Read; registrations Write; PUT /config, PUT /mode and DELETEs Admin.
//
// # Concurrency
//
// Registry, MemStore and CoordStore are safe for concurrent use.
package registry
