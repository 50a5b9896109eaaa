package tables

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/properties"
)

// Defaults of Config's optional fields.
const (
	DefaultDatabase      = "default"
	DefaultTableName     = "${topic}"
	DefaultCompatibility = "BACKWARD"
	DefaultDialTimeout   = 5 * time.Second
	DefaultCallTimeout   = 2 * time.Minute
)

// Config says where tables are registered. Zero values mean defaults.
type Config struct {
	// Enabled is hive.integration: register tables at all.
	Enabled bool
	// URIs is hive.metastore.uris: thrift://host:port, tried in order.
	URIs []string
	// Database is hive.database (default "default"), created if missing.
	Database string
	// TableName is hive.table.name, "${topic}" replaced by the topic's
	// name (default "${topic}"); characters Hive does not allow in a name
	// (anything but letters, digits and _) become _, and it is lower-cased.
	TableName string
	// Compatibility is schema.compatibility: BACKWARD (default) or FULL,
	// the levels under which a table can follow its topic's latest schema
	// by adding columns.
	Compatibility string
	// DialTimeout bounds connecting to one metastore (default 5s);
	// CallTimeout bounds each call's reads and writes (default 2m; Hive's
	// own client waits 600s: a metastore on a busy Derby can take long).
	DialTimeout, CallTimeout time.Duration
	// FileSystem is the URI (scheme://authority, e.g. hdfs://namenode:8020)
	// of the file system that partition locations given as absolute paths
	// are on: the loader's output.uri without its path. Empty: locations
	// must be URIs.
	FileSystem string
	// TableLocation returns the location of a topic's table (the directory
	// above its partitions, a URI); nil means the longest common directory
	// of the partitions wanted when the table is created.
	TableLocation func(topic string) string
}

var validName = regexp.MustCompile(`[^a-z0-9_]`)

// Table returns the table name of topic.
func (c Config) Table(topic string) string {
	name := c.TableName
	if name == "" {
		name = DefaultTableName
	}
	return validName.ReplaceAllString(strings.ToLower(strings.ReplaceAll(name, "${topic}", topic)), "_")
}

func (c Config) withDefaults() Config {
	if c.Database == "" {
		c.Database = DefaultDatabase
	}
	if c.TableName == "" {
		c.TableName = DefaultTableName
	}
	if c.Compatibility == "" {
		c.Compatibility = DefaultCompatibility
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	return c
}

// Validate checks the configuration of an enabled integration.
func (c Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	if len(c.URIs) == 0 {
		return fmt.Errorf("%w: hive.metastore.uris is required when hive.integration=true", ErrInvalidConfig)
	}
	for _, u := range c.URIs {
		if _, err := metastoreAddr(u); err != nil {
			return err
		}
	}
	switch strings.ToUpper(c.Compatibility) {
	case "", "BACKWARD", "FULL":
	default:
		return fmt.Errorf("%w: schema.compatibility=%s: want BACKWARD or FULL (a table follows the latest schema by adding columns)", ErrInvalidConfig, c.Compatibility)
	}
	if validName.MatchString(strings.ToLower(c.Database)) {
		return fmt.Errorf("%w: hive.database=%q: a Hive name has only letters, digits and _", ErrInvalidConfig, c.Database)
	}
	if c.FileSystem != "" {
		if u, err := url.Parse(c.FileSystem); err != nil || u.Scheme == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("%w: file system %q is not scheme://authority", ErrInvalidConfig, c.FileSystem)
		}
	}
	if c.DialTimeout < 0 || c.CallTimeout < 0 {
		return fmt.Errorf("%w: negative timeout", ErrInvalidConfig)
	}
	return nil
}

// metastoreAddr returns host:port of a thrift://host:port URI.
func metastoreAddr(uri string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(uri))
	if err != nil || u.Scheme != "thrift" || u.Host == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("%w: hive.metastore.uris: %q is not thrift://host:port", ErrInvalidConfig, uri)
	}
	return net.JoinHostPort(u.Hostname(), u.Port()), nil
}

// Keys lists the properties ConfigFromProperties reads.
var Keys = []string{"hive.integration", "hive.metastore.uris", "hive.database", "hive.table.name", "schema.compatibility"}

// ConfigFromProperties reads kafka-connect-hdfs's keys: hive.integration
// (false), hive.metastore.uris, hive.database (default), hive.table.name
// (${topic}) and schema.compatibility (BACKWARD). Refused values are
// recorded in p (p.Err); Validate's errors are returned.
func ConfigFromProperties(p *properties.Props) (Config, error) {
	c := Config{
		Enabled:       p.Bool("hive.integration", false),
		URIs:          p.List("hive.metastore.uris"),
		Database:      p.String("hive.database"),
		TableName:     p.String("hive.table.name"),
		Compatibility: strings.ToUpper(p.String("schema.compatibility")),
	}
	if err := p.Err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}
