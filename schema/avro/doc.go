// Package avro is Tributary's model of an Avro schema, enough to apply the
// Avro specification's "Schema Resolution" rules, which goavro does not:
//
//   - Parse validates a schema with goavro, computes its Parsing Canonical
//     Form, and builds a Type tree with named types resolved (a recursive
//     record refers back to the same *Type, so walks must guard cycles);
//   - ParseWithReferences parses a schema using named types defined by
//     other (already parsed) schemas, Confluent's schema references: the
//     referenced definitions, fully qualified, are inlined at first use
//     (goavro has no shared symbol table), and Canonical is the form of
//     the result;
//   - Check lists why data written with one schema cannot be read with
//     another (the registry's compatibility levels are built on it);
//   - Resolve converts a value decoded with the writer's schema (goavro's
//     native form) into the reader schema's shape, applying field defaults,
//     enum defaults, numeric and string/bytes promotions and union branch
//     selection, so that a consumer sees the shape it was compiled for.
//   - FullName and NameOf resolve names by the specification's rules (a
//     dotted name is full, else the enclosing or the "namespace" attribute
//     qualifies it), for every walk over schema JSON in the repository.
//
// Rules implemented (reader reads data of writer): records match by
// unqualified name or reader alias, fields by name or reader field alias; a
// reader field absent from the writer needs a default; a writer field absent
// from the reader is skipped. Promotions int->long/float/double,
// long->float/double, float->double, string<->bytes. An enum writer symbol
// unknown to the reader is an error unless the reader declares a default.
// A writer union is readable if every branch is; a non-union writer must be
// readable by some reader branch (the first that fully checks, also used by
// Resolve). Arrays by items, maps by values, fixed by name and size.
//
// Logical types are resolved by their underlying type; a value keeps the Go
// type goavro gave it for the writer's logical type (Resolve does not
// convert time.Time to a plain long, for example).
//
// A *Schema is immutable after Parse and safe for concurrent use.
package avro
