package registry

import (
	"fmt"
	"strings"
)

// Level is a subject's compatibility level, named as Confluent names it.
type Level string

const (
	Backward           Level = "BACKWARD"
	BackwardTransitive Level = "BACKWARD_TRANSITIVE"
	Forward            Level = "FORWARD"
	ForwardTransitive  Level = "FORWARD_TRANSITIVE"
	Full               Level = "FULL"
	FullTransitive     Level = "FULL_TRANSITIVE"
	None               Level = "NONE"
)

// DefaultLevel is the global level until one is configured, as in Confluent.
const DefaultLevel = Backward

// ParseLevel accepts a level name in any case.
func ParseLevel(s string) (Level, error) {
	l := Level(strings.ToUpper(strings.TrimSpace(s)))
	switch l {
	case Backward, BackwardTransitive, Forward, ForwardTransitive, Full, FullTransitive, None:
		return l, nil
	}
	return "", fmt.Errorf("%w: %q", ErrInvalidCompatibility, s)
}

// backward: the new schema must read data of earlier ones.
func (l Level) backward() bool {
	return l == Backward || l == BackwardTransitive || l == Full || l == FullTransitive
}

// forward: earlier schemas must read data of the new one.
func (l Level) forward() bool {
	return l == Forward || l == ForwardTransitive || l == Full || l == FullTransitive
}

// transitive: checked against every live version, not only the latest.
func (l Level) transitive() bool {
	return l == BackwardTransitive || l == ForwardTransitive || l == FullTransitive
}
