//go:build !race

package sasl

const raceEnabled = false
