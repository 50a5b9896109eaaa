package registry

import "context"

// SchemaRecord is a stored schema. Records are immutable once stored: an
// id always names the same schema, so readers may cache them forever.
type SchemaRecord struct {
	ID int `json:"id"`
	// Schema is the text as first registered.
	Schema string `json:"schema"`
	// Type is the schema type; "AVRO" is the only one accepted.
	Type string `json:"schemaType"`
	// Fingerprint is the hex SHA-256 of the schema's Parsing Canonical
	// Form: one fingerprint, one id.
	Fingerprint string `json:"fingerprint"`
	// References are the schemas whose named types Schema uses.
	References []Reference `json:"references,omitempty"`
}

// Reference is Confluent's schema reference: the full name of an Avro named
// type and the subject version that defines it.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// VersionRecord is one version of a subject.
type VersionRecord struct {
	Version int  `json:"-"`
	ID      int  `json:"id"`
	Deleted bool `json:"deleted"`
}

// Store keeps schemas, subjects' versions and compatibility levels. Every
// method is safe for concurrent use, also by several processes sharing one
// backing store (the ZooKeeper one). Errors are the package's sentinels,
// wrapped; a failure of the backing store wraps ErrStore.
type Store interface {
	// PutSchema returns the id of the schema whose fingerprint is
	// rec.Fingerprint, storing rec under a new id if there is none. Any
	// number of concurrent callers with one fingerprint get one id.
	PutSchema(ctx context.Context, rec SchemaRecord) (int, error)
	// ImportSchema stores rec under rec.ID (IMPORT mode). Storing the
	// schema an id already holds is a no-op; an id holding another schema
	// gives ErrIDTaken. Ids PutSchema hands out afterwards skip it.
	ImportSchema(ctx context.Context, rec SchemaRecord) error
	// Schema returns the schema with the id, or ErrSchemaNotFound.
	Schema(ctx context.Context, id int) (SchemaRecord, error)
	// Subjects lists every subject holding at least one version, soft
	// deleted or not, sorted.
	Subjects(ctx context.Context) ([]string, error)
	// Versions lists the subject's versions, soft-deleted ones included,
	// in ascending order, or ErrSubjectNotFound if it has none.
	Versions(ctx context.Context, subject string) ([]VersionRecord, error)
	// CreateVersion adds version number version with schema id. If that
	// number is taken it returns ErrVersionExists, and a following
	// Versions call sees the version that won.
	CreateVersion(ctx context.Context, subject string, version, id int) error
	// MarkDeleted soft-deletes a version (ErrVersionNotFound if absent).
	MarkDeleted(ctx context.Context, subject string, version int) error
	// DeleteVersion removes a version for good; a subject without
	// versions disappears. The schema itself stays readable by id.
	DeleteVersion(ctx context.Context, subject string, version int) error
	// Compatibility returns the level set for the subject, or for the
	// registry when subject is "", or ErrConfigNotFound.
	Compatibility(ctx context.Context, subject string) (Level, error)
	// SetCompatibility sets the level of the subject ("" for the registry).
	SetCompatibility(ctx context.Context, subject string, level Level) error
	// DeleteCompatibility removes the subject's level, or ErrConfigNotFound.
	DeleteCompatibility(ctx context.Context, subject string) error
	// Mode returns the mode set for the subject, or for the registry when
	// subject is "", or ErrModeNotFound.
	Mode(ctx context.Context, subject string) (Mode, error)
	// SetMode sets the mode of the subject ("" for the registry).
	SetMode(ctx context.Context, subject string, mode Mode) error
	// DeleteMode removes the subject's mode, or ErrModeNotFound.
	DeleteMode(ctx context.Context, subject string) error
	// Close releases the store; the Session of a coord store is the
	// caller's and stays open.
	Close() error
}
