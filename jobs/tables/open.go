package tables

import (
	"fmt"
	"net/url"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/internal/properties"
)

// Open is the one way a tables configuration becomes a Metastore: the keys
// of ConfigFromProperties and the schema registry client's
// (schema.registry.url, basic.auth.user.info, schema.registry.ssl.*) read
// from p, the partition locations given base's scheme and authority
// (hdfs://namenode:port, or file:/// for a local path). It returns nil and
// the Config with hive.integration=false; keys p does not know are left to
// the caller (p.Unknown).
func Open(p *properties.Props, base string, opts Options) (*Metastore, Config, error) {
	cfg, err := ConfigFromProperties(p)
	rcfg := serde.ClientConfigFromProperties(p, "")
	if err == nil {
		err = p.Err()
	}
	if err != nil {
		return nil, cfg, err
	}
	if !cfg.Enabled {
		return nil, cfg, nil
	}
	if rcfg.URL == "" {
		return nil, cfg, fmt.Errorf("%w: %w", ErrInvalidConfig, ErrNoRegistry)
	}
	rc, err := serde.NewRegistryClient(rcfg)
	if err != nil {
		return nil, cfg, err
	}
	cfg.FileSystem = FileSystemOf(base)
	m, err := New(cfg, rc, opts)
	if err != nil {
		return nil, cfg, err
	}
	return m, m.cfg, nil
}

// FileSystemOf is the scheme://authority of an output URI or --base, which
// the metastore's partition locations carry (file:/// for a local path:
// its partition paths /x become file:///x).
func FileSystemOf(base string) string {
	if u, err := url.Parse(base); err == nil && u.Scheme != "" && u.Scheme != "file" {
		return u.Scheme + "://" + u.Host
	}
	return "file:///"
}
