// Package properties is Tributary's one reader and writer of Kafka-style
// .properties files, and the typed getters every configuration (broker,
// mirror, loader) reads its keys through, so that a value means the same
// thing whichever command reads it.
//
// # Format
//
// Read follows java.util.Properties.load: a natural line ends at \n, \r or
// \r\n; leading spaces, tabs and form feeds are skipped; a line whose first
// character is then '#' or '!' is a comment; a line ending in an odd number
// of backslashes continues on the next one, whose leading whitespace is
// dropped. The key ends at the first unescaped '=', ':' or whitespace;
// whitespace around the separator is skipped. In keys and values \t, \n,
// \r, \f and \uXXXX (UTF-16 code units; a surrogate pair makes one rune)
// are escapes, and a backslash before any other character stands for that
// character (so "a\=b" is the key "a=b", "\\" a backslash). The input is
// read as UTF-8 bytes, which pass through unchanged. A malformed \u escape
// is an error naming its line; for a repeated key the last one wins.
//
// Write produces what Read reads back exactly, for any keys and values:
// keys sorted, one "key=value" line each, escaping as Properties.store does
// ('\\', '=', ':', '#', '!', tab, newline, carriage return, form feed,
// spaces in keys and a value's leading space) plus every other control
// character as \uXXXX; other bytes, UTF-8 included, are written as they are.
//
// # Values
//
// A Props wraps a read map and records which keys were read. Every getter
// trims the value (so "codec=snappy " is "snappy"), and one rule holds for
// every key of every configuration:
//
//   - an absent key gives the zero value, which the configurations read as
//     their default;
//   - a present value is taken literally and checked: "x=0" where 0 is not
//     allowed is an error naming x, not a silent default, and an empty
//     number or boolean is an error too (strings and lists may be empty,
//     which again leaves the default).
//
// Numbers are base-10 integers (Java's Long.parseLong: no "1e3", no "_");
// durations are integers in the unit the key names (Kafka's *.ms, *.hours),
// clamped rather than overflowing so that Long.MAX_VALUE still means
// "never"; sizes are integers of bytes; booleans are true or false in any
// case (Kafka's rule: not yes, 1 or t); lists are comma separated, each
// item trimmed, empty items dropped.
//
// URIs (Props.URI, ParseURI) may carry neither whitespace nor a
// #fragment: no location is meant by either.
//
// # Comments after a value
//
// Values are literal, as in Java: "x=5   # five" is the value "5   # five".
// Such a value (whitespace then '#' or '!') cannot be meant where the type
// forbids it, so the typed getters refuse it with ErrTrailingComment
// (numbers, durations, booleans, URIs); where the type allows it (strings,
// lists, regular expressions) the reader of the file warns, naming the key
// and the line: Parse keeps every key's line and File.Suspects lists them.
//
// A bad value does not stop the reading: Err returns every problem at once
// (errors.Join of *Error, each naming its key and value), and Unknown the
// keys nobody read, sorted, for the caller to warn about.
//
// # Concurrency
//
// Read and Write are safe for concurrent use. A Props is not: one
// goroutine builds a configuration from it.
package properties
