package broker

import (
	"context"
)

// controlledShutdown hands this broker's leaderships to other in-sync
// replicas before it stops (controlled.shutdown.enable, Kafka's controlled
// shutdown), so that clients fail over without waiting for a session
// expiry: the controller moves every partition this broker leads that has
// another live in-sync replica, and removes it from the ISRs. The broker
// serves on meanwhile. It gives up after controlled.shutdown's timeout and
// stops anyway.
func (b *Broker) controlledShutdown() {
	b.mu.RLock()
	m, closed := b.member, b.closed
	b.mu.RUnlock()
	if m == nil || closed || b.standalone || !b.cfg.Replication.ControlledShutdownEnabled() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Replication.ControlledShutdownTimeout)
	defer cancel()
	b.logger.Info("controlled shutdown: moving leadership to other replicas")
	if err := m.ControlledShutdown(ctx); err != nil {
		b.logger.Warn("controlled shutdown did not complete; stopping anyway", "err", err)
		return
	}
	b.logger.Info("controlled shutdown complete")
}
