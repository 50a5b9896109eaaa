package registry

import (
	"fmt"
	"log/slog"
)

// Config configures a Registry. The zero value is valid.
type Config struct {
	// Logger receives request failures and store trouble; nil discards.
	Logger *slog.Logger
	// DefaultCompatibility is the global level while none is stored;
	// empty means BACKWARD, Confluent's default.
	DefaultCompatibility Level
	// RegisterRetries bounds how often one registration re-reads and
	// retries after another writer took the version number it wanted;
	// 0 means 1000, enough for many processes registering into one subject.
	RegisterRetries int
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.DefaultCompatibility != "" {
		if _, err := ParseLevel(string(c.DefaultCompatibility)); err != nil {
			return fmt.Errorf("registry config: DefaultCompatibility: %w", err)
		}
	}
	if c.RegisterRetries < 0 {
		return fmt.Errorf("registry config: RegisterRetries %d is negative", c.RegisterRetries)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.DefaultCompatibility == "" {
		c.DefaultCompatibility = DefaultLevel
	}
	if c.RegisterRetries == 0 {
		c.RegisterRetries = 1000
	}
	return c
}
