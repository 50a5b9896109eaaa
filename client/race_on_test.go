//go:build race

package client

// raceEnabled: the race detector slows everything ~10x; big runs shrink.
const raceEnabled = true
