package registry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/tributary/tributary/schema/avro"
)

// SchemaTypeAvro is the only schema type the registry accepts.
const SchemaTypeAvro = "AVRO"

// Registry is the registry's logic over a Store: registration with
// compatibility checks, lookups, deletes and levels. Handler serves it as
// the Confluent REST API. A Registry is safe for concurrent use, and any
// number of Registries may share one store (across processes too).
type Registry struct {
	store Store
	cfg   Config
	// parsed caches parsed schemas by id; ids are immutable.
	parsed sync.Map // int -> *avro.Schema
}

// New returns a Registry over store. The store stays the caller's to close.
func New(store Store, cfg Config) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Registry{store: store, cfg: cfg.withDefaults()}, nil
}

// SubjectVersion is a registered schema as the version endpoints show it.
type SubjectVersion struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
	ID      int    `json:"id"`
	Schema  string `json:"schema"`
	// SchemaType is omitted for AVRO, as Confluent does.
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
}

// versions returns the subject's versions, hiding soft-deleted ones unless
// deleted is set; ErrSubjectNotFound when nothing is visible.
func (r *Registry) versions(ctx context.Context, subject string, deleted bool) ([]VersionRecord, error) {
	all, err := r.store.Versions(ctx, subject)
	if err != nil {
		return nil, err
	}
	if deleted {
		return all, nil
	}
	live := all[:0:0]
	for _, v := range all {
		if !v.Deleted {
			live = append(live, v)
		}
	}
	if len(live) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrSubjectNotFound, subject)
	}
	return live, nil
}

// Level returns the level in force for subject ("" for the global one).
func (r *Registry) Level(ctx context.Context, subject string) (Level, error) {
	if subject != "" {
		l, err := r.store.Compatibility(ctx, subject)
		if err == nil || !errors.Is(err, ErrConfigNotFound) {
			return l, err
		}
	}
	l, err := r.store.Compatibility(ctx, "")
	if errors.Is(err, ErrConfigNotFound) {
		return r.cfg.DefaultCompatibility, nil
	}
	return l, err
}

// Register adds a schema to a subject and returns its global id. A schema
// identical (in canonical form, with the same references) to a live
// version returns that version's id. With normalize the canonical form is
// stored instead of the text given (schemas without references only).
func (r *Registry) Register(ctx context.Context, subject string, in SchemaInput, normalize bool) (int, error) {
	mode, err := r.Mode(ctx, subject)
	if err != nil {
		return 0, err
	}
	switch {
	case mode == ReadOnly:
		return 0, fmt.Errorf("%w: Subject %s is in read-only mode", ErrNotPermitted, subject)
	case in.ID != 0 && mode != Import:
		return 0, fmt.Errorf("%w: Subject %s is not in import mode; a registration may name its id only in IMPORT mode", ErrNotPermitted, subject)
	case mode == Import && in.ID < 1:
		return 0, fmt.Errorf("%w: Subject %s is in import mode; a registration must name its id", ErrNotPermitted, subject)
	}
	s, refs, err := r.parseInput(ctx, in)
	if err != nil {
		return 0, err
	}
	fp := identity(s, refs)
	text := in.Schema
	if normalize && len(refs) == 0 {
		text = s.Canonical
	}
	for range r.cfg.RegisterRetries {
		all, err := r.store.Versions(ctx, subject)
		if err != nil && !errors.Is(err, ErrSubjectNotFound) {
			return 0, err
		}
		next := 1
		var live []VersionRecord
		for _, v := range all {
			next = max(next, v.Version+1)
			if v.Deleted {
				continue
			}
			live = append(live, v)
			rec, err := r.store.Schema(ctx, v.ID)
			if err != nil {
				return 0, err
			}
			if rec.Fingerprint == fp {
				if mode == Import && v.ID != in.ID {
					return 0, fmt.Errorf("%w: Schema already registered with id %d instead of input id %d", ErrIDMismatch, v.ID, in.ID)
				}
				return v.ID, nil
			}
		}
		rec := SchemaRecord{Schema: text, Type: SchemaTypeAvro, Fingerprint: fp, References: refs}
		var id int
		if mode == Import {
			// An import copies another registry's history: its
			// compatibility was checked there.
			rec.ID = in.ID
			if err := r.store.ImportSchema(ctx, rec); errors.Is(err, ErrIDTaken) {
				return 0, fmt.Errorf("%w: Overwrite new schema with id %d is not permitted", ErrNotPermitted, in.ID)
			} else if err != nil {
				return 0, err
			}
			id = in.ID
			if in.Version > 0 {
				next = in.Version
			}
		} else {
			level, err := r.Level(ctx, subject)
			if err != nil {
				return 0, err
			}
			if problems, err := r.check(ctx, s, live, level); err != nil {
				return 0, err
			} else if len(problems) > 0 {
				return 0, fmt.Errorf("%w (%s): %s", ErrIncompatible, level, strings.Join(problems, "; "))
			}
			if id, err = r.store.PutSchema(ctx, rec); err != nil {
				return 0, err
			}
		}
		err = r.store.CreateVersion(ctx, subject, next, id)
		if errors.Is(err, ErrVersionExists) {
			if mode == Import && in.Version > 0 {
				return 0, fmt.Errorf("%w: Subject %s already has version %d", ErrNotPermitted, subject, in.Version)
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		r.cfg.Logger.Debug("schema registered", "subject", subject, "version", next, "id", id)
		return id, nil
	}
	return 0, fmt.Errorf("%w: gave up registering into %q after %d version conflicts", ErrStore, subject, r.cfg.RegisterRetries)
}

// check lists the incompatibilities of s with the live versions (ascending)
// under level: the latest only, or all of them when transitive.
func (r *Registry) check(ctx context.Context, s *avro.Schema, live []VersionRecord, level Level) ([]string, error) {
	if level == None || len(live) == 0 {
		return nil, nil
	}
	against := live[len(live)-1:]
	if level.transitive() {
		against = live
	}
	var problems []string
	for i := len(against) - 1; i >= 0; i-- {
		v := against[i]
		prev, _, err := r.schemaByID(ctx, v.ID)
		if err != nil {
			return nil, err
		}
		if level.backward() {
			for _, p := range avro.Check(s, prev) {
				problems = append(problems, fmt.Sprintf("new schema cannot read data of version %d: %s", v.Version, p))
			}
		}
		if level.forward() {
			for _, p := range avro.Check(prev, s) {
				problems = append(problems, fmt.Sprintf("version %d cannot read data of the new schema: %s", v.Version, p))
			}
		}
	}
	return problems, nil
}

// CheckCompatibility tests a schema as Confluent Schema Registry 7.x
// answers POST /compatibility/subjects/{subject}/versions/{version}:
// against that one live version ("latest": the newest), under the
// subject's level. A subject without live versions is compatible with
// "latest" (there is nothing to break; Confluent 5.x answered 40401, 7.x
// answers this on purpose) and has no version n: ErrVersionNotFound
// (40402, "Version n not found."), as for a version the subject lacks.
func (r *Registry) CheckCompatibility(ctx context.Context, subject, version string, in SchemaInput) ([]string, error) {
	n, latest, err := parseVersion(version)
	if err != nil {
		return nil, err
	}
	live, err := r.versions(ctx, subject, false)
	if err != nil && !errors.Is(err, ErrSubjectNotFound) {
		return nil, err
	}
	var against []VersionRecord
	switch {
	case latest && len(live) > 0:
		against = live[len(live)-1:]
	case !latest:
		for _, v := range live {
			if v.Version == n {
				against = []VersionRecord{v}
			}
		}
		if against == nil {
			return nil, confluentError{ErrVersionNotFound, fmt.Sprintf("Version %d not found.", n)}
		}
	}
	return r.checkAgainst(ctx, subject, in, against)
}

// CheckCompatibilityAll tests a schema as a registration would: against
// the live versions the subject's level names (POST
// /compatibility/subjects/{subject}/versions, Confluent 7.x). A subject
// without live versions is compatible.
func (r *Registry) CheckCompatibilityAll(ctx context.Context, subject string, in SchemaInput) ([]string, error) {
	live, err := r.versions(ctx, subject, false)
	if err != nil && !errors.Is(err, ErrSubjectNotFound) {
		return nil, err
	}
	return r.checkAgainst(ctx, subject, in, live)
}

// checkAgainst parses the schema (even when there is nothing to check it
// against: an invalid schema is refused) and checks it against versions.
func (r *Registry) checkAgainst(ctx context.Context, subject string, in SchemaInput, versions []VersionRecord) ([]string, error) {
	s, _, err := r.parseInput(ctx, in)
	if err != nil {
		return nil, err
	}
	level, err := r.Level(ctx, subject)
	if err != nil {
		return nil, err
	}
	return r.check(ctx, s, versions, level)
}

// parseVersion reads a version path element: "latest" or -1, or 1..MaxInt32.
func parseVersion(s string) (n int, latest bool, err error) {
	if s == "latest" {
		return 0, true, nil
	}
	v, perr := strconv.ParseInt(s, 10, 64)
	switch {
	case perr != nil:
		return 0, false, fmt.Errorf("%w: %q; use a positive integer or \"latest\"", ErrInvalidVersion, s)
	case v == -1:
		return 0, true, nil
	case v < 1 || v > math.MaxInt32:
		return 0, false, fmt.Errorf("%w: %d; use a positive integer or \"latest\"", ErrInvalidVersion, v)
	}
	return int(v), false, nil
}

// version finds one version of a subject; "latest" is the newest visible.
func (r *Registry) version(ctx context.Context, subject, version string, deleted bool) (VersionRecord, error) {
	n, latest, err := parseVersion(version)
	if err != nil {
		return VersionRecord{}, err
	}
	vs, err := r.versions(ctx, subject, deleted)
	if err != nil {
		return VersionRecord{}, err
	}
	if latest {
		return vs[len(vs)-1], nil
	}
	for _, v := range vs {
		if v.Version == n {
			return v, nil
		}
	}
	return VersionRecord{}, fmt.Errorf("%w: %q version %d", ErrVersionNotFound, subject, n)
}

// Version returns one version of a subject.
func (r *Registry) Version(ctx context.Context, subject, version string, deleted bool) (SubjectVersion, error) {
	v, err := r.version(ctx, subject, version, deleted)
	if err != nil {
		return SubjectVersion{}, err
	}
	rec, err := r.store.Schema(ctx, v.ID)
	if err != nil {
		return SubjectVersion{}, err
	}
	return subjectVersion(subject, v, rec), nil
}

func subjectVersion(subject string, v VersionRecord, rec SchemaRecord) SubjectVersion {
	sv := SubjectVersion{Subject: subject, Version: v.Version, ID: v.ID, Schema: rec.Schema, References: rec.References}
	if rec.Type != SchemaTypeAvro {
		sv.SchemaType = rec.Type
	}
	return sv
}

// Lookup finds the version of a subject holding the schema (same canonical
// form and references). Identity is always by canonical form, so
// ?normalize=true changes nothing here.
func (r *Registry) Lookup(ctx context.Context, subject string, in SchemaInput, deleted bool) (SubjectVersion, error) {
	vs, err := r.versions(ctx, subject, deleted)
	if err != nil {
		return SubjectVersion{}, err
	}
	s, refs, err := r.parseInput(ctx, in)
	if err != nil {
		return SubjectVersion{}, err
	}
	fp := identity(s, refs)
	for i := len(vs) - 1; i >= 0; i-- {
		rec, err := r.store.Schema(ctx, vs[i].ID)
		if err != nil {
			return SubjectVersion{}, err
		}
		if rec.Fingerprint == fp {
			return subjectVersion(subject, vs[i], rec), nil
		}
	}
	return SubjectVersion{}, fmt.Errorf("%w: not registered under subject %q", ErrSchemaNotFound, subject)
}

// Subjects lists subjects with a visible version (any version if deleted).
func (r *Registry) Subjects(ctx context.Context, deleted bool) ([]string, error) {
	all, err := r.store.Subjects(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(all))
	for _, s := range all {
		_, err := r.versions(ctx, s, deleted)
		if errors.Is(err, ErrSubjectNotFound) {
			continue // removed meanwhile, or all versions soft-deleted
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// VersionNumbers lists the subject's visible version numbers.
func (r *Registry) VersionNumbers(ctx context.Context, subject string, deleted bool) ([]int, error) {
	vs, err := r.versions(ctx, subject, deleted)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = v.Version
	}
	return out, nil
}

// Schema returns the schema with the id. Schemas stay readable by id after
// their versions are deleted, so consumers can read old data.
func (r *Registry) Schema(ctx context.Context, id int) (SchemaRecord, error) {
	return r.store.Schema(ctx, id)
}

// SubjectVersionRef names one version of one subject.
type SubjectVersionRef struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// SchemaVersions lists the subject versions using a schema id.
func (r *Registry) SchemaVersions(ctx context.Context, id int, deleted bool) ([]SubjectVersionRef, error) {
	if _, err := r.store.Schema(ctx, id); err != nil {
		return nil, err
	}
	subjects, err := r.store.Subjects(ctx)
	if err != nil {
		return nil, err
	}
	out := []SubjectVersionRef{}
	for _, s := range subjects {
		vs, err := r.store.Versions(ctx, s)
		if errors.Is(err, ErrSubjectNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			if v.ID == id && (deleted || !v.Deleted) {
				out = append(out, SubjectVersionRef{Subject: s, Version: v.Version})
			}
		}
	}
	return out, nil
}

// DeleteSubject soft-deletes every live version of a subject, or, with
// permanent, removes a subject whose versions are all soft-deleted. It
// returns the version numbers it deleted.
func (r *Registry) DeleteSubject(ctx context.Context, subject string, permanent bool) ([]int, error) {
	if err := r.checkWritable(ctx, subject); err != nil {
		return nil, err
	}
	all, err := r.store.Versions(ctx, subject)
	if err != nil {
		return nil, err
	}
	for _, v := range all {
		if err := r.checkNotReferenced(ctx, subject, v.Version); err != nil {
			return nil, err
		}
	}
	deleted := []int{}
	for _, v := range all {
		if permanent && !v.Deleted {
			return nil, fmt.Errorf("%w: %q", ErrSubjectNotSoftDeleted, subject)
		}
	}
	for _, v := range all {
		switch {
		case permanent:
			err = r.store.DeleteVersion(ctx, subject, v.Version)
		case v.Deleted:
			continue
		default:
			err = r.store.MarkDeleted(ctx, subject, v.Version)
		}
		if err != nil {
			return nil, err
		}
		deleted = append(deleted, v.Version)
	}
	if !permanent && len(deleted) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrSubjectSoftDeleted, subject)
	}
	if permanent {
		if err := r.store.DeleteCompatibility(ctx, subject); err != nil && !errors.Is(err, ErrConfigNotFound) {
			return nil, err
		}
	}
	return deleted, nil
}

// DeleteVersion soft-deletes one version, or, with permanent, removes a
// soft-deleted one. It returns the version number.
func (r *Registry) DeleteVersion(ctx context.Context, subject, version string, permanent bool) (int, error) {
	_, latest, err := parseVersion(version)
	if err != nil {
		return 0, err
	}
	if err := r.checkWritable(ctx, subject); err != nil {
		return 0, err
	}
	// A numbered version is found even when soft-deleted, so that deleting
	// it twice reports 40406 rather than 40402; "latest" is the newest live
	// version for a soft delete.
	v, err := r.version(ctx, subject, version, permanent || !latest)
	if err != nil {
		return 0, err
	}
	switch {
	case !permanent && v.Deleted:
		return 0, fmt.Errorf("%w: %q version %d", ErrVersionSoftDeleted, subject, v.Version)
	case permanent && !v.Deleted:
		return 0, fmt.Errorf("%w: %q version %d", ErrVersionNotSoftDeleted, subject, v.Version)
	}
	if err := r.checkNotReferenced(ctx, subject, v.Version); err != nil {
		return 0, err
	}
	switch {
	case permanent:
		err = r.store.DeleteVersion(ctx, subject, v.Version)
	default:
		err = r.store.MarkDeleted(ctx, subject, v.Version)
	}
	if err != nil {
		return 0, err
	}
	return v.Version, nil
}

// Mode returns the mode in force for subject ("" for the global one).
func (r *Registry) Mode(ctx context.Context, subject string) (Mode, error) {
	if subject != "" {
		m, err := r.store.Mode(ctx, subject)
		if err == nil || !errors.Is(err, ErrModeNotFound) {
			return m, err
		}
	}
	m, err := r.store.Mode(ctx, "")
	if errors.Is(err, ErrModeNotFound) {
		return DefaultMode, nil
	}
	return m, err
}

// SetMode sets the mode of subject ("" for the registry). IMPORT needs the
// subject (or, globally, every subject) to hold no live version, unless
// force: ids imported into a subject with history could clash with it.
func (r *Registry) SetMode(ctx context.Context, subject string, mode Mode, force bool) error {
	if mode == Import && !force {
		var subjects []string
		if subject == "" {
			all, err := r.Subjects(ctx, false)
			if err != nil {
				return err
			}
			subjects = all
		} else if _, err := r.versions(ctx, subject, false); err == nil {
			subjects = []string{subject}
		} else if !errors.Is(err, ErrSubjectNotFound) {
			return err
		}
		if len(subjects) > 0 {
			return fmt.Errorf("%w: Cannot import since found existing subjects %v; set force=true to override", ErrNotPermitted, subjects)
		}
	}
	return r.store.SetMode(ctx, subject, mode)
}

// checkWritable refuses deletes while the subject is READONLY.
func (r *Registry) checkWritable(ctx context.Context, subject string) error {
	m, err := r.Mode(ctx, subject)
	if err != nil {
		return err
	}
	if m == ReadOnly {
		return fmt.Errorf("%w: Subject %s is in read-only mode", ErrNotPermitted, subject)
	}
	return nil
}

// ListSchemas lists the versions of every subject starting with prefix:
// visible ones (all with deleted), or each subject's latest only.
func (r *Registry) ListSchemas(ctx context.Context, prefix string, deleted, latestOnly bool) ([]SubjectVersion, error) {
	subjects, err := r.Subjects(ctx, deleted)
	if err != nil {
		return nil, err
	}
	out := []SubjectVersion{}
	for _, subject := range subjects {
		if !strings.HasPrefix(subject, prefix) {
			continue
		}
		vs, err := r.versions(ctx, subject, deleted)
		if errors.Is(err, ErrSubjectNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if latestOnly {
			vs = vs[len(vs)-1:]
		}
		for _, v := range vs {
			rec, err := r.store.Schema(ctx, v.ID)
			if err != nil {
				return nil, err
			}
			out = append(out, subjectVersion(subject, v, rec))
		}
	}
	return out, nil
}
