//go:build race

package sasl

// raceEnabled: the race detector makes bcrypt about 15 times slower.
const raceEnabled = true
