package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tributary/tributary/internal/devcluster"
)

// Fault is one fault a soak injects: Inject breaks something and returns
// once it is repaired (a restart, a broker back).
type Fault struct {
	Name   string
	Inject func(ctx context.Context, p *Pipeline) error
}

// RestartPartFault stops a part ("mirror", "loader", "audit") and starts
// it again after down.
func RestartPartFault(name string, down time.Duration) Fault {
	return Fault{Name: fmt.Sprintf("restart %s (down %v)", name, down), Inject: func(ctx context.Context, p *Pipeline) error {
		if err := p.StopPart(name); err != nil {
			p.logger.Warn("fault: stop", "part", name, "err", err)
		}
		sleep(ctx, down)
		return p.StartPart(context.WithoutCancel(ctx), name)
	}}
}

// BrokerFault stops broker id of cluster and starts it again after down:
// its partitions are unavailable meanwhile.
func BrokerFault(cluster string, id int, down time.Duration) Fault {
	return Fault{Name: fmt.Sprintf("stop broker %d of %s (down %v)", id, cluster, down), Inject: func(ctx context.Context, p *Pipeline) error {
		c := p.Cluster(cluster)
		if c == nil {
			return fmt.Errorf("no cluster %q", cluster)
		}
		if err := stopBroker(c, id); err != nil {
			return err
		}
		sleep(ctx, down)
		return c.StartBroker(p.life, id)
	}}
}

// brokerStopTimeout bounds a fault's broker stop.
const brokerStopTimeout = time.Minute

// stopBroker stops broker id, failing (rather than hanging the run) if
// its graceful Close does not return in time: a client still sending on a
// connection the broker failed to unblock keeps it waiting.
func stopBroker(c *devcluster.Cluster, id int) error {
	done := make(chan error, 1)
	go func() { done <- c.StopBroker(id) }()
	select {
	case err := <-done:
		return err
	case <-time.After(brokerStopTimeout):
		return fmt.Errorf("broker %d of %s did not stop within %v: its Close waits for a connection still being read", id, c.Name(), brokerStopTimeout)
	}
}

// ClusterOutageFault stops every broker of cluster for down: the cluster
// is unreachable, as when a network partition cuts it off.
func ClusterOutageFault(cluster string, down time.Duration) Fault {
	return Fault{Name: fmt.Sprintf("%s unreachable for %v", cluster, down), Inject: func(ctx context.Context, p *Pipeline) error {
		c := p.Cluster(cluster)
		if c == nil {
			return fmt.Errorf("no cluster %q", cluster)
		}
		n := len(c.Bootstrap())
		var errs []error
		for id := 1; id <= n; id++ {
			if err := stopBroker(c, id); err != nil {
				return err
			}
		}
		sleep(ctx, down)
		for id := 1; id <= n; id++ {
			errs = append(errs, c.StartBroker(p.life, id))
		}
		return errors.Join(errs...)
	}}
}

// FuncFault wraps an outside action (e.g. killing a ZooKeeper node).
func FuncFault(name string, fn func(ctx context.Context) error) Fault {
	return Fault{Name: name, Inject: func(ctx context.Context, _ *Pipeline) error { return fn(ctx) }}
}

// FaultLog records what a schedule injected.
type FaultLog struct {
	mu       sync.Mutex
	Injected []string
}

func (l *FaultLog) add(s string) {
	l.mu.Lock()
	l.Injected = append(l.Injected, s)
	l.mu.Unlock()
}

// Count returns how many faults were injected.
func (l *FaultLog) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.Injected)
}

// Schedule returns a DemoOptions.During that injects faults in turn, one
// every `every` (the first after one `every`), cycling through the list
// until ctx ends; a fault still being repaired when ctx ends is finished
// first, so that the run drains with every part up. Each injection is
// logged to out and to log.
func Schedule(every time.Duration, faults []Fault, log *FaultLog, out io.Writer) func(context.Context, *Pipeline) error {
	return func(ctx context.Context, p *Pipeline) error {
		start := time.Now()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(every):
			}
			f := faults[i%len(faults)]
			fmt.Fprintf(out, "  %3.0fs  fault: %s\n", time.Since(start).Seconds(), f.Name)
			log.add(f.Name)
			// The repair must happen even if the run ends meanwhile.
			if err := f.Inject(context.WithoutCancel(ctx), p); err != nil {
				return fmt.Errorf("fault %q: %w", f.Name, err)
			}
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
