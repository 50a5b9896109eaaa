package registry

import (
	"fmt"
	"strings"
)

// Mode is what a subject (or the registry) lets writers do, as Confluent's
// /mode endpoints name it.
type Mode string

const (
	// ReadWrite is the default: registrations and deletes as usual.
	ReadWrite Mode = "READWRITE"
	// ReadOnly refuses registrations and deletes.
	ReadOnly Mode = "READONLY"
	// Import accepts registrations that name their id (and version), for
	// copying another registry; compatibility is not checked.
	Import Mode = "IMPORT"
)

// DefaultMode is the registry's mode until one is set.
const DefaultMode = ReadWrite

// ParseMode accepts a mode name in any case.
func ParseMode(s string) (Mode, error) {
	m := Mode(strings.ToUpper(strings.TrimSpace(s)))
	switch m {
	case ReadWrite, ReadOnly, Import:
		return m, nil
	}
	return "", fmt.Errorf("%w: %q; use READWRITE, READONLY or IMPORT", ErrInvalidMode, s)
}
