package main

import (
	"fmt"
	"strings"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/properties"
)

// metricsConfig reads the metrics.* keys of a daemon's properties
// (metrics.ssl.*, metrics.ssl.client.authentication,
// metrics.authentication.*, metrics.authorization.roles.*,
// metrics.pprof.enable: network.MetricsConfigFromProperties); what the
// daemon serves /metrics with.
func metricsConfig(props map[string]string) (network.MetricsConfig, error) {
	p := properties.New(props)
	c := network.MetricsConfigFromProperties(p, "")
	if err := p.Err(); err != nil {
		return c, err
	}
	if err := c.HTTP.Validate(); err != nil {
		return c, fmt.Errorf("metrics: %w", err)
	}
	return c, nil
}

// metricsConfigFile is metricsConfig of a properties file; "" is the zero
// config (plain, anonymous, pprof on loopback only).
func metricsConfigFile(path string) (network.MetricsConfig, error) {
	if path == "" {
		return network.MetricsConfig{}, nil
	}
	props, err := readPropertiesFile(path, nil)
	if err != nil {
		return network.MetricsConfig{}, err
	}
	c, err := metricsConfig(props)
	if err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// isMetricsKey reports whether the command, not the daemon's package,
// reads key.
func isMetricsKey(key string) bool { return strings.HasPrefix(key, "metrics.") }
