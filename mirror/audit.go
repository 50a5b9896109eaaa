package mirror

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/network"
)

// auditCounter is an audit.Counter publishing to the target's audit topic
// through a client of its own, closed after the counter.
type auditCounter struct {
	*audit.Counter
	cl *kgo.Client
}

// NewAuditCounter returns the counter of tier "mirror" in cluster
// target.name that New expects, publishing to the target's __audit; nil
// (count nothing) with audit.enable=false, and with exactly.once=true,
// where the mirror writes its counts in its transactions itself (eos.go).
// ctx is unused beyond the call.
func NewAuditCounter(_ context.Context, cfg Config) (Counter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.AuditDisable || cfg.ExactlyOnce {
		return nil, nil
	}
	cfg = cfg.withDefaults()
	cl, err := network.NewClient(network.ClientConfig{Brokers: cfg.TargetBrokers, ClientID: cfg.ClientID, Logger: cfg.Logger.With("client", "audit")}.Secured(cfg.TargetSecurity))
	if err != nil {
		return nil, fmt.Errorf("mirror: audit client: %w", err)
	}
	c, err := audit.NewCounter(audit.Config{
		Tier:       "mirror",
		Cluster:    cfg.TargetName,
		Instance:   cfg.instance(),
		Window:     cfg.AuditWindow,
		Interval:   cfg.AuditInterval,
		Logger:     cfg.Logger,
		Registerer: cfg.Registerer,
	}, audit.NewKafkaPublisher(cl, ""))
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("mirror: %w", err)
	}
	return &auditCounter{Counter: c, cl: cl}, nil
}

func (a *auditCounter) Close(ctx context.Context) error {
	err := a.Counter.Close(ctx)
	a.cl.Close()
	return err
}
