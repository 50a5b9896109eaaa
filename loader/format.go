package loader

import (
	"io"

	"github.com/tributary/tributary/hours"
)

// fileFormat is one output format of the loader: what its data files are
// called (package hours owns the names) and how they are written. A
// second format is one more implementation; the loader's commit protocol,
// naming and moves do not change. avroFormat (ocf.go) is the only one.
type fileFormat interface {
	format() hours.Format
	// newWriter starts a data file of records of one writer schema on w.
	newWriter(w io.Writer, schemaText string) (fileWriter, error)
}

// fileWriter writes one data file.
type fileWriter interface {
	// Append adds one record: an Avro binary datum of the file's writer
	// schema, already validated against it (the producer's bytes).
	Append(datum []byte) error
	// Close finishes the file; it does not close the underlying writer.
	Close() error
}
