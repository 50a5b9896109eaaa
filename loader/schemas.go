package loader

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/schema"
	"github.com/tributary/tributary/schema/avro"
)

// writerSchema is a registry schema as the loader uses it: the text goes
// into the container file header (with the stored Kafka columns appended),
// the parsed form (the registry's schema) validates payloads.
// bad is set when the id cannot be loaded (unknown to the registry, or a
// schema this loader cannot write), which makes its records bad records.
type writerSchema struct {
	text   string
	parsed *avro.Schema
	bad    string
}

// schemaCache fetches each writer schema once; ids are immutable.
type schemaCache struct {
	reg *serde.RegistryClient
	// stored are the Kafka columns appended to the writer schema in files.
	stored hours.Stored
	mu     sync.Mutex
	m      map[schema.ID]*writerSchema
}

func (c *schemaCache) get(ctx context.Context, id schema.ID) (*writerSchema, error) {
	c.mu.Lock()
	s := c.m[id]
	c.mu.Unlock()
	if s != nil {
		return s, nil
	}
	text, err := c.reg.SchemaByID(ctx, int(id))
	switch {
	case errors.Is(err, serde.ErrUnknownSchema):
		s = &writerSchema{bad: fmt.Sprintf("unknown schema id %d", id)}
	case err != nil:
		return nil, fmt.Errorf("schema registry: schema %d: %w", id, err)
	default:
		parsed, perr := avro.Parse(text)
		if perr != nil {
			s = &writerSchema{bad: fmt.Sprintf("schema %d does not parse (references are not supported): %v", id, perr)}
		} else if fileText, serr := c.stored.FileSchema(text); serr != nil {
			s = &writerSchema{bad: fmt.Sprintf("schema %d: %v", id, serr)}
		} else {
			s = &writerSchema{text: fileText, parsed: parsed}
		}
	}
	c.mu.Lock()
	c.m[id] = s
	c.mu.Unlock()
	return s, nil
}
