package serde

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tributary/tributary/schema"
	"github.com/tributary/tributary/schema/avro"
)

// SubjectNameStrategy names the subject of a topic's keys or values.
type SubjectNameStrategy func(topic string, isKey bool) string

// TopicNameStrategy is Confluent's default: "<topic>-key", "<topic>-value".
func TopicNameStrategy(topic string, isKey bool) string {
	if isKey {
		return topic + "-key"
	}
	return topic + "-value"
}

// SerializerConfig configures a Serializer. The zero value is valid.
type SerializerConfig struct {
	// Strategy names subjects for EncodeTopic; nil means TopicNameStrategy.
	Strategy SubjectNameStrategy
	// Key makes EncodeTopic use the key subject.
	Key bool
}

// Serializer frames Avro values with their registered schema id.
type Serializer struct {
	reg      Registry
	strategy SubjectNameStrategy
	key      bool

	mu     sync.RWMutex
	cached map[[2]string]encoder // (subject, schema text)
}

type encoder struct {
	id     schema.ID
	schema *avro.Schema
}

// NewSerializer returns a Serializer registering through reg.
func NewSerializer(reg Registry, cfg SerializerConfig) *Serializer {
	if cfg.Strategy == nil {
		cfg.Strategy = TopicNameStrategy
	}
	return &Serializer{reg: reg, strategy: cfg.Strategy, key: cfg.Key, cached: map[[2]string]encoder{}}
}

// Encode returns value, in goavro's native form for schemaText, Avro
// encoded behind the frame of its id under subject. The schema is
// registered (or found) on first use only.
func (s *Serializer) Encode(ctx context.Context, subject, schemaText string, value any) ([]byte, error) {
	enc, err := s.encoder(ctx, subject, schemaText)
	if err != nil {
		return nil, err
	}
	out := schema.AppendHeader(make([]byte, 0, 64), enc.id)
	out, err = enc.schema.Codec().BinaryFromNative(out, value)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEncode, err)
	}
	return out, nil
}

// EncodeTopic is Encode with the subject the strategy gives for topic.
func (s *Serializer) EncodeTopic(ctx context.Context, topic, schemaText string, value any) ([]byte, error) {
	return s.Encode(ctx, s.strategy(topic, s.key), schemaText, value)
}

func (s *Serializer) encoder(ctx context.Context, subject, schemaText string) (encoder, error) {
	key := [2]string{subject, schemaText}
	s.mu.RLock()
	enc, ok := s.cached[key]
	s.mu.RUnlock()
	if ok {
		return enc, nil
	}
	parsed, err := avro.Parse(schemaText)
	if err != nil {
		return encoder{}, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	id, err := s.reg.Register(ctx, subject, schemaText)
	if err != nil {
		return encoder{}, fmt.Errorf("register schema under %q: %w", subject, err)
	}
	if !schema.ID(id).Valid() {
		return encoder{}, fmt.Errorf("%w: registry returned id %d", ErrRegistry, id)
	}
	enc = encoder{id: schema.ID(id), schema: parsed}
	s.mu.Lock()
	s.cached[key] = enc
	s.mu.Unlock()
	return enc, nil
}

// Deserializer decodes framed payloads with the writer schema named by
// their id, optionally resolving them into a reader schema.
type Deserializer struct {
	reg Registry

	mu        sync.RWMutex
	writers   map[schema.ID]*avro.Schema
	resolvers map[resolverKey]*avro.Resolver
}

type resolverKey struct {
	reader *avro.Schema
	writer schema.ID
}

// NewDeserializer returns a Deserializer fetching schemas through reg.
func NewDeserializer(reg Registry) *Deserializer {
	return &Deserializer{reg: reg, writers: map[schema.ID]*avro.Schema{}, resolvers: map[resolverKey]*avro.Resolver{}}
}

// Decode returns the value of a framed payload in goavro's native form for
// the writer's schema, and the schema id.
func (d *Deserializer) Decode(ctx context.Context, b []byte) (any, int, error) {
	id, _, v, err := d.decode(ctx, b)
	return v, int(id), err
}

// DecodeAs decodes like Decode and converts the value into the shape of
// reader (parse it once with ParseSchema and reuse it).
func (d *Deserializer) DecodeAs(ctx context.Context, b []byte, reader *avro.Schema) (any, int, error) {
	id, writer, v, err := d.decode(ctx, b)
	if err != nil {
		return nil, int(id), err
	}
	rs, err := d.resolver(reader, id, writer)
	if err != nil {
		return nil, int(id), err
	}
	out, err := rs.Resolve(v)
	if err != nil {
		if errors.Is(err, avro.ErrIncompatible) {
			return nil, int(id), fmt.Errorf("%w: %v", ErrIncompatible, err)
		}
		return nil, int(id), fmt.Errorf("%w: %v", ErrMalformedPayload, err)
	}
	return out, int(id), nil
}

// ParseSchema parses a reader schema for DecodeAs.
func ParseSchema(text string) (*avro.Schema, error) {
	s, err := avro.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return s, nil
}

func (d *Deserializer) decode(ctx context.Context, b []byte) (id schema.ID, writer *avro.Schema, v any, err error) {
	id, payload, err := schema.Parse(b)
	switch {
	case errors.Is(err, schema.ErrBadMagic):
		return 0, nil, nil, err
	case errors.Is(err, schema.ErrBadID):
		return id, nil, nil, fmt.Errorf("%w: %v", ErrUnknownSchema, err)
	case err != nil:
		return 0, nil, nil, fmt.Errorf("%w: %v", ErrMalformedPayload, err)
	}
	writer, err = d.writer(ctx, id)
	if err != nil {
		return id, nil, nil, err
	}
	if err := writer.Validate(payload); err != nil {
		return id, writer, nil, fmt.Errorf("%w: schema %d: %v", ErrMalformedPayload, id, err)
	}
	defer func() {
		// Validate should leave goavro nothing to choke on; this is the
		// backstop that keeps garbage from taking a consumer down.
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("%w: schema %d: decoder panic: %v", ErrMalformedPayload, id, p)
		}
	}()
	v, rest, err := writer.Codec().NativeFromBinary(payload)
	if err != nil {
		return id, writer, nil, fmt.Errorf("%w: schema %d: %v", ErrMalformedPayload, id, err)
	}
	if len(rest) != 0 {
		return id, writer, nil, fmt.Errorf("%w: schema %d: %d trailing bytes", ErrMalformedPayload, id, len(rest))
	}
	return id, writer, v, nil
}

// writer returns the schema with the id, fetched once and kept.
func (d *Deserializer) writer(ctx context.Context, id schema.ID) (*avro.Schema, error) {
	d.mu.RLock()
	s, ok := d.writers[id]
	d.mu.RUnlock()
	if ok {
		return s, nil
	}
	s, err := d.fetchWriter(ctx, id)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.writers[id] = s
	d.mu.Unlock()
	return s, nil
}

// maxReferenceDepth bounds chains of schema references.
const maxReferenceDepth = 32

// fetchWriter fetches and parses a writer schema, with its references when
// the registry reports them.
func (d *Deserializer) fetchWriter(ctx context.Context, id schema.ID) (*avro.Schema, error) {
	rr, ok := d.reg.(ReferenceRegistry)
	if !ok {
		text, err := d.reg.SchemaByID(ctx, int(id))
		if err != nil {
			return nil, fetchErr(id, err)
		}
		s, err := avro.Parse(text)
		if err != nil {
			return nil, fmt.Errorf("%w: registry schema %d: %v", ErrInvalidSchema, id, err)
		}
		return s, nil
	}
	rs, err := rr.SchemaWithReferences(ctx, int(id))
	if err != nil {
		return nil, fetchErr(id, err)
	}
	s, err := parseWithReferences(ctx, rr, rs, 0)
	if err != nil {
		return nil, fmt.Errorf("registry schema %d: %w", id, err)
	}
	return s, nil
}

func fetchErr(id schema.ID, err error) error {
	if errors.Is(err, ErrUnknownSchema) {
		return fmt.Errorf("schema id %d: %w", id, err)
	}
	return fmt.Errorf("fetch schema %d: %w", id, err)
}

// parseWithReferences parses rs after fetching and parsing, depth first,
// the subject versions it refers to.
func parseWithReferences(ctx context.Context, rr ReferenceRegistry, rs RegisteredSchema, depth int) (*avro.Schema, error) {
	if depth > maxReferenceDepth {
		return nil, fmt.Errorf("%w: references nested deeper than %d", ErrInvalidSchema, maxReferenceDepth)
	}
	refs := make([]*avro.Schema, 0, len(rs.References))
	for _, ref := range rs.References {
		sub, err := rr.SubjectVersion(ctx, ref.Subject, ref.Version)
		if err != nil {
			return nil, fmt.Errorf("reference %s (%s version %d): %w", ref.Name, ref.Subject, ref.Version, err)
		}
		s, err := parseWithReferences(ctx, rr, sub, depth+1)
		if err != nil {
			return nil, err
		}
		refs = append(refs, s)
	}
	s, err := avro.ParseWithReferences(rs.Schema, refs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return s, nil
}

func (d *Deserializer) resolver(reader *avro.Schema, id schema.ID, writer *avro.Schema) (*avro.Resolver, error) {
	key := resolverKey{reader, id}
	d.mu.RLock()
	rs, ok := d.resolvers[key]
	d.mu.RUnlock()
	if ok {
		return rs, nil
	}
	rs, err := avro.NewResolver(reader, writer)
	if err != nil {
		return nil, fmt.Errorf("%w: reader cannot read schema %d: %v", ErrIncompatible, id, err)
	}
	d.mu.Lock()
	d.resolvers[key] = rs
	d.mu.Unlock()
	return rs, nil
}
