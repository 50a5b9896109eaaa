package broker

import "github.com/tributary/tributary/broker/config"

// withMemLogs runs the broker over in-memory logs.
func withMemLogs() Option {
	return withLogOpener(func(string, config.LogSettings) (PartitionLog, error) { return newMemLog(), nil })
}
