// Package filesys is one small interface over the two file systems the
// pipeline writes to: HDFS (through github.com/colinmarc/hdfs/v2) and the
// local file system (the embedded default for demos and tests).
//
// Open takes a URI: "hdfs://[user@]host:port[,host:port...]/base",
// "file:///abs/base" or a plain path, and returns the FS with the base path
// inside it. Names given to an FS are absolute, slash-separated paths in
// that FS (on the local FS, OS paths).
//
// OpenWith and OpenHDFSWith take HDFSOptions for a Kerberized cluster: a
// login from a keytab (gokrb5) before connecting, so a wrong keytab fails
// the open with ErrKerberos before anything is written; a periodic re-login
// (kerberos.ticket.renew.period.ms) besides gokrb5's own refresh, so a
// NameNode connection redialled after a ticket expired authenticates with
// a new one; and the DataNodes' SASL protection. integrity, and privacy
// without AES/CTR/NoPadding, are refused (ErrHDFSConfig): colinmarc/hdfs
// v2.4.0 loses bytes reading under them. HDFSOptionsFromProperties reads
// the properties (Confluent's HDFS connector's keys) for every command.
//
// Semantics, identical on both implementations (the conformance suite in
// filesystest checks them):
//
//   - Create creates missing parent directories and fails with an error
//     matching fs.ErrExist if the name exists. Bytes written are visible to
//     readers only after Close returned nil (HDFS: the file is "under
//     construction" until then; local: Close fsyncs). On HDFS an empty
//     file's Close returns once the file exists: colinmarc/hdfs cannot get
//     an empty file completed, so it stays under construction, empty,
//     until its lease expires (harmless for readers and renames).
//   - Rename replaces an existing destination file (HDFS's rename2 with
//     overwrite, POSIX rename); it never fails because the destination
//     exists, so a protocol must not use it as a lock. A missing source or
//     a missing destination parent gives fs.ErrNotExist. The local FS
//     fsyncs the destination directory, so a committed rename survives a
//     machine crash.
//   - Remove removes a file or an empty directory; a missing name gives an
//     error matching fs.ErrNotExist. RemoveAll removes a tree; a missing
//     name is not an error.
//   - MkdirAll succeeds if the directory exists.
//   - ReadDir lists a directory sorted by name; Stat and ReadDir report
//     fs.ErrNotExist for a missing name.
//
// Concurrency: an FS is safe for concurrent use; each writer or reader it
// returns is used by one goroutine.
package filesys
