package registry

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/properties"
)

// ServerConfig is a registry.properties file, with Confluent Schema
// Registry's key names where Confluent has one (see the package
// documentation, "Server configuration").
type ServerConfig struct {
	// Listen is the HOST:PORT of listeners ("" when not given).
	Listen string
	// HTTP is the listener's TLS (listeners=https://...) and basic
	// authentication.
	HTTP network.HTTPConfig
	// Compatibility is schema.compatibility.level ("" when not given).
	Compatibility Level
	// ZooKeeper is zookeeper.connect ("" when not given).
	ZooKeeper string
}

// ignoredServerKeys are Confluent keys that have no meaning here but
// appear in stock files; they are accepted without a warning.
var ignoredServerKeys = []string{
	"kafkastore.bootstrap.servers", "kafkastore.topic", "debug", "host.name",
	"schema.registry.group.id", "kafkastore.connection.url",
}

// ReadServerConfig reads a registry.properties file; see
// ServerConfigFromProperties.
func ReadServerConfig(path string) (ServerConfig, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return ServerConfig{}, nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	defer f.Close()
	m, err := properties.Read(f)
	if err != nil {
		return ServerConfig{}, nil, fmt.Errorf("%w: %s: %w", ErrInvalidConfig, path, err)
	}
	return ServerConfigFromProperties(m)
}

// ServerConfigFromProperties builds a ServerConfig. It returns warnings for
// unknown keys and an error naming every bad value.
func ServerConfigFromProperties(m map[string]string) (ServerConfig, []string, error) {
	p := properties.New(m)
	p.Ignore(ignoredServerKeys...)
	var c ServerConfig
	c.HTTP = network.HTTPConfigFromProperties(p, "")
	c.HTTP.TLS = false
	if v := p.List("listeners"); len(v) > 1 {
		p.Reject("listeners", errors.New("only one listener is supported"))
	} else if len(v) == 1 {
		scheme, hostPort, ok := strings.Cut(v[0], "://")
		if _, _, err := net.SplitHostPort(hostPort); !ok || err != nil {
			p.Reject("listeners", errors.New("want http://HOST:PORT or https://HOST:PORT"))
		}
		switch strings.ToLower(scheme) {
		case "https":
			c.HTTP.TLS = true
		case "http":
		default:
			p.Reject("listeners", fmt.Errorf("scheme %q: want http or https", scheme))
		}
		c.Listen = hostPort
	}
	if v := p.String("schema.compatibility.level"); v != "" {
		l, err := ParseLevel(v)
		if err != nil {
			p.Reject("schema.compatibility.level", err)
		}
		c.Compatibility = l
	}
	c.ZooKeeper = p.String("zookeeper.connect")
	var warnings []string
	for _, k := range p.Unknown() {
		warnings = append(warnings, fmt.Sprintf("unknown configuration key %q ignored", k))
	}
	if err := p.Err(); err != nil {
		return ServerConfig{}, warnings, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := c.HTTP.Validate(); err != nil {
		return ServerConfig{}, warnings, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return c, warnings, nil
}

// Need is the permission each request of Handler needs: reads, schema
// lookups (POST /subjects/{subject}) and compatibility checks need Read;
// registering (POST /subjects/{subject}/versions) Write; changing config
// or mode (PUT) and every DELETE Admin.
func Need(r *http.Request) network.Permission {
	path := r.URL.EscapedPath()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return network.Read
	case http.MethodPost:
		if strings.HasPrefix(path, "/compatibility/") {
			return network.Read
		}
		if subject, ok := strings.CutPrefix(path, "/subjects/"); ok && subject != "" && !strings.Contains(subject, "/") {
			return network.Read
		}
		return network.Write
	}
	return network.Admin
}
