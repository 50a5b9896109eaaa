package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/network"
)

// auditFlags are the audit settings of produce and consume: the tier they
// count as, the cluster name their events carry, the window and how often
// counts are published.
type auditFlags struct {
	cluster  string
	window   time.Duration
	interval time.Duration
	topic    string
}

func (a *auditFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&a.cluster, "audit-cluster", "", "cluster name in audit events (default: the --bootstrap value)")
	fs.DurationVar(&a.window, "audit-window", audit.DefaultWindow, "audit window: records are counted by the window of their own timestamp")
	fs.DurationVar(&a.interval, "audit-interval", audit.DefaultInterval, "how often audit counts are published (and once at exit)")
	fs.StringVar(&a.topic, "audit-topic", audit.DefaultTopic, "the audit topic")
}

func (a *auditFlags) validate() error {
	if a.window <= 0 || a.window%time.Millisecond != 0 {
		return badFlag("audit-window", a.window.String(), "must be a positive whole number of milliseconds")
	}
	if a.interval <= 0 {
		return badFlag("audit-interval", a.interval.String(), "must be positive")
	}
	if a.topic == "" {
		return badFlag("audit-topic", a.topic, "must not be empty")
	}
	return nil
}

// auditCounter is a Counter with the client that publishes its events.
type auditCounter struct {
	*audit.Counter
	cl *kgo.Client
}

// start returns a counter for tier publishing to the audit topic of the
// cluster conn reaches, through a client of its own (conn's security,
// client.id with "-audit").
func (a *auditFlags) start(tier string, conn network.ClientConfig, logger *slog.Logger) (*auditCounter, error) {
	brokers := conn.Brokers
	conn.ClientID += "-audit"
	cl, err := network.NewClient(conn)
	if err != nil {
		return nil, err
	}
	cluster := a.cluster
	if cluster == "" {
		cluster = strings.Join(brokers, ",")
	}
	c, err := audit.NewCounter(audit.Config{
		Tier: tier, Cluster: cluster, Window: a.window, Interval: a.interval, Topic: a.topic, Logger: logger,
	}, audit.NewKafkaPublisher(cl, a.topic))
	if err != nil {
		cl.Close()
		return nil, err
	}
	return &auditCounter{Counter: c, cl: cl}, nil
}

// close publishes the last counts (bounded by ctx) and closes the client.
func (c *auditCounter) close(ctx context.Context) error {
	if c == nil {
		return nil
	}
	defer c.cl.Close()
	if err := c.Counter.Close(ctx); err != nil {
		return fmt.Errorf("audit: publish last counts: %w", err)
	}
	return nil
}

// auditCloseTimeout bounds the last publish of a command that exits.
const auditCloseTimeout = 30 * time.Second
