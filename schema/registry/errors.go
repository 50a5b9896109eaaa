package registry

import "errors"

// The sentinels of the registry. Each maps to one Confluent error code and
// HTTP status in apiErrors (apierror.go); the store implementations return
// them wrapped with %w.
var (
	// ErrSubjectNotFound: no (visible) version of the subject exists. 40401.
	ErrSubjectNotFound = errors.New("registry: subject not found")
	// ErrVersionNotFound: the subject has no (visible) such version. 40402.
	ErrVersionNotFound = errors.New("registry: version not found")
	// ErrSchemaNotFound: no schema has the id, or the subject has no such schema. 40403.
	ErrSchemaNotFound = errors.New("registry: schema not found")
	// ErrSubjectSoftDeleted: a soft delete of a subject already soft-deleted. 40404.
	ErrSubjectSoftDeleted = errors.New("registry: subject was soft deleted; set permanent=true to delete permanently")
	// ErrSubjectNotSoftDeleted: a permanent delete of a subject with live versions. 40405.
	ErrSubjectNotSoftDeleted = errors.New("registry: subject must be soft deleted before it is permanently deleted")
	// ErrVersionSoftDeleted: a soft delete of a version already soft-deleted. 40406.
	ErrVersionSoftDeleted = errors.New("registry: version was soft deleted; set permanent=true to delete permanently")
	// ErrVersionNotSoftDeleted: a permanent delete of a live version. 40407.
	ErrVersionNotSoftDeleted = errors.New("registry: version must be soft deleted before it is permanently deleted")
	// ErrConfigNotFound: the subject has no compatibility level of its own. 40408.
	ErrConfigNotFound = errors.New("registry: subject compatibility level not configured")
	// ErrModeNotFound: the subject has no mode of its own. 40409.
	ErrModeNotFound = errors.New("registry: subject mode not configured")
	// ErrIncompatible: the schema breaks the subject's compatibility level. 409.
	ErrIncompatible = errors.New("registry: schema being registered is incompatible with an earlier schema")
	// ErrInvalidSchema: not a valid Avro schema, or an unsupported schema type. 42201.
	ErrInvalidSchema = errors.New("registry: invalid schema")
	// ErrInvalidVersion: a version that is neither "latest" nor 1..2^31-1. 42202.
	ErrInvalidVersion = errors.New("registry: invalid version")
	// ErrInvalidCompatibility: an unknown compatibility level. 42203.
	ErrInvalidCompatibility = errors.New("registry: invalid compatibility level")
	// ErrInvalidMode: an unknown mode. 42204.
	ErrInvalidMode = errors.New("registry: invalid mode")
	// ErrNotPermitted: the subject's mode forbids the operation (READONLY
	// refuses writes; an id in a registration needs IMPORT; IMPORT needs
	// an empty subject), or an import would give an id a second schema. 42205.
	ErrNotPermitted = errors.New("registry: operation not permitted")
	// ErrReferenceExists: a version other schemas refer to cannot be deleted. 42206.
	ErrReferenceExists = errors.New("registry: one or more references exist to the schema")
	// ErrIDMismatch: an import names an id but the subject holds the schema under another. 42207.
	ErrIDMismatch = errors.New("registry: schema already registered with another id")
	// ErrIDTaken: Store.ImportSchema was given an id that holds another
	// schema; the registry reports it as ErrNotPermitted.
	ErrIDTaken = errors.New("registry: id holds another schema")
	// ErrStore: the backing store failed. 50001.
	ErrStore = errors.New("registry: error in the backend data store")
	// ErrVersionExists: Store.CreateVersion lost a race for the version
	// number; the caller re-reads and retries. Never reaches a client.
	ErrVersionExists = errors.New("registry: version already exists")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("registry: store closed")
	// ErrInvalidConfig: a registry.properties value is refused
	// (ServerConfigFromProperties). Never reaches a client.
	ErrInvalidConfig = errors.New("registry: invalid configuration")
)
