package group

import "errors"

var (
	// ErrInvalidConfig: a configuration value is out of range; the message names the key.
	ErrInvalidConfig = errors.New("group: invalid configuration")
	// ErrNotLoaded: the offsets partition is not (or no longer) loaded on this coordinator.
	ErrNotLoaded = errors.New("group: offsets partition not loaded here")
	// ErrCorruptRecord: a record of the offsets topic does not decode; it is skipped on load.
	ErrCorruptRecord = errors.New("group: corrupt offsets record")
	// ErrProducerFenced: a transactional append was refused because the
	// producer's epoch is older than the partition's (a zombie).
	ErrProducerFenced = errors.New("group: producer fenced")
)
