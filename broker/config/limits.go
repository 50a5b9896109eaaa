package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/properties"
)

// Defaults of the resource limits, Kafka's where Kafka has the property.
const (
	// DefaultConnectionsMaxIdle is connections.max.idle.ms (10 minutes).
	DefaultConnectionsMaxIdle = 10 * time.Minute
	// DefaultDescriptorReserve is log.descriptor.reserve: spare descriptors
	// the storage engine holds for rolls, flushes and checkpoints.
	DefaultDescriptorReserve = 16
)

// Limits bounds what clients can make the broker hold: connections,
// open files and the rate of topic creation. Zero values mean defaults.
type Limits struct {
	// ConnectionsMaxIdle is connections.max.idle.ms: a connection with no
	// request in flight and nothing read or written for this long is
	// closed. Zero means 10 minutes; negative means never.
	ConnectionsMaxIdle time.Duration
	// MaxConnections is max.connections: connections accepted at once;
	// more are closed as soon as accepted. Zero means what the descriptor
	// budget leaves for connections (see MaxOpenFiles).
	MaxConnections int
	// MaxConnectionsPerIP is max.connections.per.ip; zero means unlimited.
	MaxConnectionsPerIP int
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides:
	// per host or IP limits ("127.0.0.1:200,admin-host:0").
	MaxConnectionsPerIPOverrides map[string]int
	// MaxOpenFiles is log.max.open.files (Tributary's, after RocksDB's
	// max_open_files): segment files open at once across all partitions.
	// Zero means half of RLIMIT_NOFILE less the reserve.
	MaxOpenFiles int
	// DescriptorReserve is log.descriptor.reserve (Tributary's): spare
	// descriptors kept for rolls, flushes and checkpoints when the process
	// runs out. Zero means 16; negative means none.
	DescriptorReserve int
	// ControllerMutationRate is controller.mutation.rate (KIP-599's
	// controller_mutation_rate quota as a broker-wide default): partitions
	// one client id may create or delete per second, averaged over
	// quota.window.num windows of quota.window.size.seconds. Zero means
	// unlimited (Kafka's default).
	ControllerMutationRate float64
	// QuotaWindowNum is quota.window.num (default 11) and QuotaWindowSize
	// quota.window.size.seconds (default 1 s): the quota's burst is
	// rate x num x size.
	QuotaWindowNum  int
	QuotaWindowSize time.Duration
}

func (c Limits) WithDefaults() Limits {
	if c.ConnectionsMaxIdle == 0 {
		c.ConnectionsMaxIdle = DefaultConnectionsMaxIdle
	}
	if c.DescriptorReserve == 0 {
		c.DescriptorReserve = DefaultDescriptorReserve
	}
	if c.QuotaWindowNum == 0 {
		c.QuotaWindowNum = 11
	}
	if c.QuotaWindowSize == 0 {
		c.QuotaWindowSize = time.Second
	}
	return c
}

// Validate names the offending property.
func (c Limits) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.MaxConnections < 0:
		return fmt.Errorf("%w: max.connections: must be >= 0, got %d", ErrInvalidConfig, c.MaxConnections)
	case c.MaxConnectionsPerIP < 0:
		return fmt.Errorf("%w: max.connections.per.ip: must be >= 0, got %d", ErrInvalidConfig, c.MaxConnectionsPerIP)
	case c.MaxOpenFiles < 0:
		return fmt.Errorf("%w: log.max.open.files: must be >= 0, got %d", ErrInvalidConfig, c.MaxOpenFiles)
	case c.ControllerMutationRate < 0 || math.IsNaN(c.ControllerMutationRate) || math.IsInf(c.ControllerMutationRate, 0):
		return fmt.Errorf("%w: controller.mutation.rate: must be >= 0, got %v", ErrInvalidConfig, c.ControllerMutationRate)
	case c.QuotaWindowNum < 1:
		return fmt.Errorf("%w: quota.window.num: must be >= 1, got %d", ErrInvalidConfig, c.QuotaWindowNum)
	case c.QuotaWindowSize < time.Millisecond:
		return fmt.Errorf("%w: quota.window.size.seconds: must be >= 1", ErrInvalidConfig)
	}
	for host, n := range c.MaxConnectionsPerIPOverrides {
		if host == "" || n < 0 {
			return fmt.Errorf("%w: max.connections.per.ip.overrides: bad entry %q:%d", ErrInvalidConfig, host, n)
		}
	}
	return nil
}

// limitPropertySetters are the keys of Limits, merged into
// propertySetters.
var limitPropertySetters = map[string]func(c *Config, v string) error{
	"connections.max.idle.ms": func(c *Config, v string) error {
		n, err := properties.ParseInt(v, 64, math.MinInt64)
		if err != nil {
			return err
		}
		if n <= 0 {
			c.Limits.ConnectionsMaxIdle = -1
		} else {
			c.Limits.ConnectionsMaxIdle = time.Duration(n) * time.Millisecond
		}
		return nil
	},
	"max.connections":        func(c *Config, v string) error { return setLimitInt(&c.Limits.MaxConnections, v) },
	"max.connections.per.ip": func(c *Config, v string) error { return setLimitInt(&c.Limits.MaxConnectionsPerIP, v) },
	"max.connections.per.ip.overrides": func(c *Config, v string) error {
		m, err := parsePerIPOverrides(v)
		c.Limits.MaxConnectionsPerIPOverrides = m
		return err
	},
	"log.max.open.files": func(c *Config, v string) error { return setLimitInt(&c.Limits.MaxOpenFiles, v) },
	"log.descriptor.reserve": func(c *Config, v string) error {
		n, err := properties.ParseInt(v, 32, 0)
		if err != nil {
			return err
		}
		c.Limits.DescriptorReserve = int(n)
		if n == 0 {
			c.Limits.DescriptorReserve = -1 // none; zero is the default in Limits
		}
		return nil
	},
	"controller.mutation.rate": func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return fmt.Errorf("not a non-negative number")
		}
		if f == math.MaxFloat64 || f > 1e15 { // Kafka's "unlimited" is Double.MAX_VALUE
			f = 0
		}
		c.Limits.ControllerMutationRate = f
		return nil
	},
	"quota.window.num": func(c *Config, v string) error { return setLimitInt(&c.Limits.QuotaWindowNum, v) },
	"quota.window.size.seconds": func(c *Config, v string) error {
		var n int
		if err := setLimitInt(&n, v); err != nil || n < 1 {
			return fmt.Errorf("must be a positive integer")
		}
		c.Limits.QuotaWindowSize = time.Duration(n) * time.Second
		return nil
	},
}

// setLimitInt parses a positive count (0, which Limits reads as its
// default, is refused); Kafka writes "unlimited" as Int.MaxValue, which is
// our zero.
func setLimitInt(dst *int, v string) error {
	n, err := properties.ParseInt(v, 64, 1)
	if err != nil {
		return err
	}
	if n >= math.MaxInt32 {
		n = 0
	}
	*dst = int(n)
	return nil
}

// parsePerIPOverrides parses Kafka's "host:n,host2:m" (an IPv6 address
// keeps its colons: the count follows the last one).
func parsePerIPOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		i := strings.LastIndexByte(part, ':')
		if i <= 0 {
			return nil, fmt.Errorf("entry %q is not host:count", part)
		}
		n, err := strconv.Atoi(strings.TrimSpace(part[i+1:]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("entry %q: count must be a non-negative integer", part)
		}
		out[strings.TrimSpace(part[:i])] = n
	}
	return out, nil
}
