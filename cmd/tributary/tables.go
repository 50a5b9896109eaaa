package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/properties"
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
func catalogOf(file, tablesConfig, base string, logger *slog.Logger) (hours.Catalog, func(), error) {
	none := func() {}
	switch {
	case file != "" && tablesConfig != "":
		return nil, none, errors.New("--catalog-file and --tables-config: give one")
	case file != "":
		return &hours.FileCatalog{Path: file}, none, nil
	case tablesConfig == "":
		return nil, none, nil
	}
	props, err := readPropertiesFile(tablesConfig, nil)
	if err != nil {
		return nil, none, fmt.Errorf("--tables-config %s: %w", tablesConfig, err)
	}
	p := properties.New(props)
	m, _, err := tables.Open(p, base, tables.Options{Logger: logger})
	if err != nil {
		return nil, none, fmt.Errorf("--tables-config %s: %w", tablesConfig, err)
	}
	for _, k := range p.Unknown() {
		logger.Warn("unknown key in --tables-config, ignored", "key", k)
	}
	if m == nil {
		return nil, none, nil
	}
	return m, func() { _ = m.Close() }, nil
}
