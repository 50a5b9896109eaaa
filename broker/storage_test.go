package broker

import (
	"github.com/tributary/tributary/broker/config"

	"github.com/tributary/tributary/broker/partition"
)

// withMemLogs runs the broker over in-memory logs.
func withMemLogs() Option {
	return withLogOpener(func(string, config.LogSettings) (partition.Log, error) { return newMemLog(), nil })
}
