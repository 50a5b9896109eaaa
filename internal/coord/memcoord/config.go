package memcoord

import "log/slog"

// Config configures a Session. The zero value is valid.
type Config struct {
	// Logger receives session lifecycle messages at debug level; nil
	// discards them.
	Logger *slog.Logger
}

// Validate reports whether the configuration is usable. Every Config is
// today; the method exists so callers treat both implementations alike.
func (c Config) Validate() error { return nil }

func (c Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.DiscardHandler)
}
