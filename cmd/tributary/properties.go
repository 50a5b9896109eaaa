package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/properties"
)

// readPropertiesFile is readProperties warning on stderr.
func readPropertiesFile(path string, overrides []string) (map[string]string, error) {
	return readProperties(textLogger(os.Stderr, slog.LevelWarn), path, overrides)
}

// readProperties reads the Kafka-style properties file of --config
// (internal/properties' syntax) and applies the --override key=value pairs
// on top, as `tributary broker`, `mirror` and `loader` all take them. An
// override's value is taken as it is, unescaped. Every value of the file
// that looks like it ends in a comment ("topics=a|b   # regex": '#' starts
// a comment only at the start of a line) is warned about on logger, with
// its line; the typed keys among them are refused by the configuration's
// getters.
func readProperties(logger *slog.Logger, path string, overrides []string) (map[string]string, error) {
	if path == "" {
		return nil, errors.New("--config is required")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	file, err := properties.Parse(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	props := file.Values
	for _, s := range file.Suspects() {
		if !slices.ContainsFunc(overrides, func(kv string) bool { k, _, _ := strings.Cut(kv, "="); return strings.TrimSpace(k) == s.Key }) {
			logger.Warn("property value looks like it ends in a comment; '#' starts a comment only at the start of a line, so it is part of the value",
				"file", path, "line", s.Line, "key", s.Key, "value", s.Value)
		}
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

// readHDFSConfig reads the HDFS client keys (filesys.HDFSKeys: Kerberos,
// data transfer protection) of the properties file of --hdfs-config, as
// `jobs compact`, `jobs retention` and `pipeline up` take them. Other keys
// are ignored, so the loader's own properties file serves. "" is a plain
// HDFS.
func readHDFSConfig(path string) (filesys.HDFSOptions, error) {
	if path == "" {
		return filesys.HDFSOptions{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return filesys.HDFSOptions{}, fmt.Errorf("--hdfs-config: %w", err)
	}
	props, err := properties.Read(f)
	f.Close()
	if err != nil {
		return filesys.HDFSOptions{}, fmt.Errorf("--hdfs-config %s: %w", path, err)
	}
	p := properties.New(props)
	o := filesys.HDFSOptionsFromProperties(p)
	if err := p.Err(); err != nil {
		return o, fmt.Errorf("--hdfs-config %s: %w", path, err)
	}
	if err := o.Validate(); err != nil {
		return o, fmt.Errorf("--hdfs-config %s: %w", path, err)
	}
	return o, nil
}
