package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tributary/tributary/schema/avro"
)

// maxReferenceDepth bounds chains of references (a refers to b refers to
// c ...); references always point at older schemas, so a chain cannot loop,
// but a corrupt store must not recurse for ever.
const maxReferenceDepth = 32

// SchemaInput is a schema as clients submit it to register, lookup and
// compatibility calls.
type SchemaInput struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	// ID and Version ask for an id and a version number: IMPORT mode only.
	ID      int `json:"id,omitempty"`
	Version int `json:"version,omitempty"`
}

// identity is what decides "same schema": the canonical form (referenced
// types inlined) and, when there are any, the references themselves, as
// Confluent compares schema and references.
func identity(s *avro.Schema, refs []Reference) string {
	if len(refs) == 0 {
		return s.Fingerprint() // unchanged for schemas without references
	}
	raw, _ := json.Marshal(refs)
	sum := sha256.Sum256([]byte(s.Canonical + "\x00" + string(raw)))
	return hex.EncodeToString(sum[:])
}

// parseInput validates a submitted schema, resolving its references to live
// versions ("latest" or -1 becomes the newest version's number). It returns
// the references as they will be stored.
func (r *Registry) parseInput(ctx context.Context, in SchemaInput) (*avro.Schema, []Reference, error) {
	if in.SchemaType != "" && !strings.EqualFold(in.SchemaType, SchemaTypeAvro) {
		return nil, nil, fmt.Errorf("%w: schema type %s is not supported; this registry supports only AVRO", ErrInvalidSchema, in.SchemaType)
	}
	if strings.TrimSpace(in.Schema) == "" {
		return nil, nil, fmt.Errorf("%w: empty schema", ErrInvalidSchema)
	}
	var refs []Reference
	var parsed []*avro.Schema
	for _, ref := range in.References {
		if ref.Name == "" || ref.Subject == "" {
			return nil, nil, fmt.Errorf("%w: a reference needs a name and a subject: %+v", ErrInvalidSchema, ref)
		}
		version := strconv.Itoa(ref.Version)
		if ref.Version == 0 {
			version = "latest"
		}
		v, err := r.version(ctx, ref.Subject, version, false)
		if errors.Is(err, ErrSubjectNotFound) || errors.Is(err, ErrVersionNotFound) || errors.Is(err, ErrInvalidVersion) {
			return nil, nil, fmt.Errorf("%w: reference %s: %v", ErrInvalidSchema, ref.Name, err)
		}
		if err != nil {
			return nil, nil, err
		}
		s, _, err := r.parsedByID(ctx, v.ID, 1)
		if err != nil {
			return nil, nil, err
		}
		ref.Version = v.Version
		refs = append(refs, ref)
		parsed = append(parsed, s)
	}
	s, err := avro.ParseWithReferences(in.Schema, parsed)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return s, refs, nil
}

// schemaByID returns the parsed schema with the id, cached for good.
func (r *Registry) schemaByID(ctx context.Context, id int) (*avro.Schema, SchemaRecord, error) {
	return r.parsedByID(ctx, id, 0)
}

func (r *Registry) parsedByID(ctx context.Context, id, depth int) (*avro.Schema, SchemaRecord, error) {
	rec, err := r.store.Schema(ctx, id)
	if err != nil {
		return nil, SchemaRecord{}, err
	}
	if s, ok := r.parsed.Load(id); ok {
		return s.(*avro.Schema), rec, nil
	}
	if depth > maxReferenceDepth {
		return nil, rec, fmt.Errorf("%w: schema %d: references nested deeper than %d", ErrStore, id, maxReferenceDepth)
	}
	var refs []*avro.Schema
	for _, ref := range rec.References {
		// Soft-deleted referenced versions still count: the referring
		// schema must stay readable (deletes of referenced versions are
		// refused, see checkNotReferenced).
		v, err := r.version(ctx, ref.Subject, strconv.Itoa(ref.Version), true)
		if err != nil {
			return nil, rec, fmt.Errorf("%w: schema %d: reference %s: %w", ErrStore, id, ref.Name, err)
		}
		s, _, err := r.parsedByID(ctx, v.ID, depth+1)
		if err != nil {
			return nil, rec, err
		}
		refs = append(refs, s)
	}
	s, err := avro.ParseWithReferences(rec.Schema, refs)
	if err != nil {
		return nil, rec, fmt.Errorf("%w: stored schema %d does not parse: %v", ErrStore, id, err)
	}
	r.parsed.Store(id, s)
	return s, rec, nil
}

// ReferencedBy returns the ids of the schemas whose references name the
// subject's version, sorted; soft-deleted referring versions count, since
// their schemas must stay readable.
func (r *Registry) ReferencedBy(ctx context.Context, subject, version string) ([]int, error) {
	v, err := r.version(ctx, subject, version, false)
	if err != nil {
		return nil, err
	}
	return r.referencedBy(ctx, subject, v.Version)
}

func (r *Registry) referencedBy(ctx context.Context, subject string, version int) ([]int, error) {
	subjects, err := r.store.Subjects(ctx)
	if err != nil {
		return nil, err
	}
	ids := []int{}
	for _, s := range subjects {
		vs, err := r.store.Versions(ctx, s)
		if errors.Is(err, ErrSubjectNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			rec, err := r.store.Schema(ctx, v.ID)
			if err != nil {
				return nil, err
			}
			for _, ref := range rec.References {
				if ref.Subject == subject && ref.Version == version && !slices.Contains(ids, v.ID) {
					ids = append(ids, v.ID)
				}
			}
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// checkNotReferenced refuses to delete a version other schemas refer to.
func (r *Registry) checkNotReferenced(ctx context.Context, subject string, version int) error {
	ids, err := r.referencedBy(ctx, subject, version)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		return fmt.Errorf("%w {subject=%s,version=%d}: referenced by schema ids %v", ErrReferenceExists, subject, version, ids)
	}
	return nil
}
