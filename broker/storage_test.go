package broker

// withMemLogs runs the broker over in-memory logs.
func withMemLogs() Option {
	return withLogOpener(func(string, plogSettings) (PartitionLog, error) { return newMemLog(), nil })
}
