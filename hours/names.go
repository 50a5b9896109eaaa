package hours

import (
	"fmt"
	"strconv"
	"strings"
)

// Format is a data file format, named as its file name extension is.
type Format string

// Data file formats. Frozen: they are the extensions in file names.
const (
	// Avro is an Avro object container file, the loader's format.
	Avro Format = "avro"
	// Parquet is a Parquet file, the compaction's format.
	Parquet Format = "parquet"
)

// ParquetAvroSchemaKey is the key, in a compacted Parquet file's footer
// metadata, of the Avro writer schema its rows were written with
// (parquet-avro's key; frozen).
const ParquetAvroSchemaKey = "parquet.avro.schema"

// Ext is the file name extension of the format, with its dot.
func (f Format) Ext() string { return "." + string(f) }

func parseFormat(ext string) (Format, bool) {
	switch Format(ext) {
	case Avro, Parquet:
		return Format(ext), true
	}
	return "", false
}

// LoaderFile is the name of one file the loader writes into an hour:
//
//	<topic>+<partition>+<first>+<last>+s<schemaID>.<format>
//
// where first and last are the offsets of its first and last record.
// Frozen. Topic names cannot contain '+' (Kafka allows [A-Za-z0-9._-]).
type LoaderFile struct {
	Topic       string
	Partition   int32
	First, Last int64
	SchemaID    uint32
	Format      Format
}

// Name returns the file name.
func (f LoaderFile) Name() string {
	return fmt.Sprintf("%s+%d+%d+%d+s%d%s", f.Topic, f.Partition, f.First, f.Last, f.SchemaID, f.Format.Ext())
}

// ParseLoaderFile parses a loader file name; the error wraps ErrNotLoaderFile.
func ParseLoaderFile(name string) (LoaderFile, error) {
	bad := func(what string) (LoaderFile, error) {
		return LoaderFile{}, fmt.Errorf("%w: %q: %s", ErrNotLoaderFile, name, what)
	}
	stem, ext, ok := cutExt(name)
	if !ok {
		return bad("no known format extension")
	}
	f := strings.Split(stem, "+")
	if len(f) != 5 || f[0] == "" || !strings.HasPrefix(f[4], "s") {
		return bad("want <topic>+<partition>+<first>+<last>+s<schema id>")
	}
	p, err := strconv.ParseInt(f[1], 10, 32)
	if err != nil || p < 0 {
		return bad("partition")
	}
	first, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || first < 0 {
		return bad("first offset")
	}
	last, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil || last < first {
		return bad("last offset")
	}
	id, err := strconv.ParseUint(f[4][1:], 10, 32)
	if err != nil {
		return bad("schema id")
	}
	lf := LoaderFile{Topic: f[0], Partition: int32(p), First: first, Last: last, SchemaID: uint32(id), Format: ext}
	if lf.Name() != name {
		return bad("not in canonical form")
	}
	return lf, nil
}

// CompactedFile is the name of one Parquet file a compaction writes into
// an hour: <topic>+s<schemaID>+<nnn>.parquet, nnn numbering the files of
// one schema from 000. Frozen.
type CompactedFile struct {
	Topic    string
	SchemaID uint32
	Seq      int
}

// Name returns the file name.
func (f CompactedFile) Name() string {
	return fmt.Sprintf("%s+s%d+%03d%s", f.Topic, f.SchemaID, f.Seq, Parquet.Ext())
}

// ParseCompactedFile parses a compaction output name; the error wraps
// ErrNotCompactedFile.
func ParseCompactedFile(name string) (CompactedFile, error) {
	bad := func(what string) (CompactedFile, error) {
		return CompactedFile{}, fmt.Errorf("%w: %q: %s", ErrNotCompactedFile, name, what)
	}
	stem, ext, ok := cutExt(name)
	if !ok || ext != Parquet {
		return bad("not a .parquet name")
	}
	f := strings.Split(stem, "+")
	if len(f) != 3 || f[0] == "" || !strings.HasPrefix(f[1], "s") {
		return bad("want <topic>+s<schema id>+<nnn>")
	}
	id, err := strconv.ParseUint(f[1][1:], 10, 32)
	if err != nil {
		return bad("schema id")
	}
	seq, err := strconv.Atoi(f[2])
	if err != nil || seq < 0 {
		return bad("sequence number")
	}
	cf := CompactedFile{Topic: f[0], SchemaID: uint32(id), Seq: seq}
	if cf.Name() != name {
		return bad("not in canonical form")
	}
	return cf, nil
}

// cutExt splits name at its last dot into a stem and a known format.
func cutExt(name string) (string, Format, bool) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return "", "", false
	}
	f, ok := parseFormat(name[i+1:])
	return name[:i], f, ok
}
