package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tributary/tributary/internal/properties"
)

// readPropertiesFile reads the Kafka-style properties file of --config
// (internal/properties' syntax) and applies the --override key=value pairs
// on top, as `tributary broker`, `mirror` and `loader` all take them. An
// override's value is taken as it is, unescaped.
func readPropertiesFile(path string, overrides []string) (map[string]string, error) {
	if path == "" {
		return nil, errors.New("--config is required")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	props, err := properties.Read(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	for _, kv := range overrides {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--override %q: want key=value", kv)
		}
		props[strings.TrimSpace(k)] = v
	}
	return props, nil
}
