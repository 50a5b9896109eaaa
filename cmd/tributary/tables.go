package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/jobs/tables"
)

// catalogOf is the catalog a compaction or retention run syncs: the local
// JSON file of --catalog-file, or the Hive Metastore of --tables-config (a
// properties file with kafka-connect-hdfs's hive.integration,
// hive.metastore.uris, hive.database, hive.table.name,
// schema.compatibility and the schema registry client's keys); nil with
// neither, or with hive.integration=false. base is the run's --base, whose
// scheme and authority the metastore's partition locations get. The
// returned close releases the metastore connection.
func catalogOf(file, tablesConfig, base string, logger *slog.Logger) (compact.Catalog, func(), error) {
	none := func() {}
	switch {
	case file != "" && tablesConfig != "":
		return nil, none, errors.New("--catalog-file and --tables-config: give one")
	case file != "":
		return &compact.FileCatalog{Path: file}, none, nil
	case tablesConfig == "":
		return nil, none, nil
	}
	props, err := readPropertiesFile(tablesConfig, nil)
	if err != nil {
		return nil, none, fmt.Errorf("--tables-config %s: %w", tablesConfig, err)
	}
	p := properties.New(props)
	cfg, err := tables.ConfigFromProperties(p)
	rcfg := serde.ClientConfigFromProperties(p, "")
	if err == nil {
		err = p.Err()
	}
	if err != nil {
		return nil, none, fmt.Errorf("--tables-config %s: %w", tablesConfig, err)
	}
	for _, k := range p.Unknown() {
		logger.Warn("unknown key in --tables-config, ignored", "key", k)
	}
	if !cfg.Enabled {
		return nil, none, nil
	}
	if rcfg.URL == "" {
		return nil, none, fmt.Errorf("--tables-config %s: schema.registry.url is required with hive.integration=true (the table's columns come from the topic's latest value schema)", tablesConfig)
	}
	rc, err := serde.NewRegistryClient(rcfg)
	if err != nil {
		return nil, none, fmt.Errorf("--tables-config %s: %w", tablesConfig, err)
	}
	cfg.FileSystem = fileSystemOf(base)
	m, err := tables.New(cfg, rc, tables.Options{Logger: logger})
	if err != nil {
		return nil, none, fmt.Errorf("--tables-config %s: %w", tablesConfig, err)
	}
	return m, func() { _ = m.Close() }, nil
}

// fileSystemOf is the scheme://authority of a --base (file:/// for a local
// path: its partition paths /x become file:///x).
func fileSystemOf(base string) string {
	if u, err := url.Parse(base); err == nil && u.Scheme != "" && u.Scheme != "file" {
		return u.Scheme + "://" + u.Host
	}
	return "file:///"
}
