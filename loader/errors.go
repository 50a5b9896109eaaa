package loader

import "errors"

var (
	// ErrInvalidConfig: the configuration is invalid (the message names the key).
	ErrInvalidConfig = errors.New("loader: bad configuration")
	// ErrCorruptManifest: a committed manifest does not parse. Manifests are
	// renamed into place only once complete, so this means damage by
	// something else; the loader stops rather than guess offsets.
	ErrCorruptManifest = errors.New("loader: corrupt manifest")
	// ErrLostOwnership: the process lost a partition's ownership (its
	// ZooKeeper session ended) before it could commit.
	ErrLostOwnership = errors.New("loader: partition ownership lost")
	// ErrFetchStalled: a run's fetches returned nothing for a minute while
	// partitions were short of the end offsets listed at its start. The
	// run ends without committing those partitions; the next run starts
	// from their commits.
	ErrFetchStalled = errors.New("loader: fetch stalled")
	// ErrNoTopics: the topics regular expression matches no topic of the
	// cluster (a typo, or a topic not created yet). Run fails with it
	// (the message names the expression and some topics that exist);
	// Serve warns every cycle and keeps trying.
	ErrNoTopics = errors.New("loader: topics matches no topic")
)
