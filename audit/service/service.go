package service

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tributary/tributary/audit/store"
	"github.com/tributary/tributary/internal/network"
)

// Service is the audit service.
type Service struct {
	cfg     Config
	store   *store.Store
	metrics *metrics
	ln      net.Listener
}

// New validates cfg, opens the store under cfg.Dir and binds cfg.Listen.
// Run starts consuming and serving.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.fill()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("audit service: dir: %w", err)
	}
	st, err := store.Open(filepath.Join(cfg.Dir, StoreFile))
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, store: st}
	if s.metrics, err = newMetrics(s, cfg.Registerer); err != nil {
		st.Close()
		return nil, err
	}
	if s.ln, err = network.ListenHTTP(context.Background(), cfg.Listen); err != nil {
		st.Close()
		return nil, fmt.Errorf("audit service: listen: %w", err)
	}
	return s, nil
}

// Addr is the address the HTTP server listens on.
func (s *Service) Addr() string { return s.ln.Addr().String() }

// Run consumes every cluster's audit topic and serves HTTP until ctx ends,
// then closes the store.
func (s *Service) Run(ctx context.Context) error {
	defer s.store.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range s.cfg.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.ingest(ctx, c)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.pruneLoop(ctx)
	}()
	srv := network.ServeHTTP(s.ln, s.Handler(), s.cfg.Security, need)
	s.cfg.Logger.Info("audit service listening", "addr", s.Addr(), "scheme", s.cfg.Security.Scheme(), "dir", s.cfg.Dir)
	var err error
	select {
	case <-ctx.Done():
	case <-srv.Done():
		err = fmt.Errorf("audit service: http: %w", srv.Err())
		cancel()
	}
	shutdownCtx, c2 := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer c2()
	srv.Shutdown(shutdownCtx)
	wg.Wait()
	return err
}

// need is what each request needs: /healthz answers anyone (it tells
// nothing but "ok"); the rest is for viewers.
func need(r *http.Request) network.Permission {
	if r.URL.Path == "/healthz" {
		return network.Anonymous
	}
	return network.Read
}

// pruneLoop drops windows older than the retention, at start and then
// every pruneInterval.
func (s *Service) pruneLoop(ctx context.Context) {
	t := time.NewTicker(pruneInterval)
	defer t.Stop()
	for {
		cutoff := s.cfg.Now().Add(-s.cfg.Retention)
		if n, err := s.store.Prune(cutoff); err != nil {
			s.cfg.Logger.Error("audit service: prune failed", "err", err)
		} else if n > 0 {
			s.cfg.Logger.Info("audit service: pruned windows older than the retention", "windows", n, "before", cutoff.UTC().Format(time.RFC3339))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Topics lists the topics the store holds counts for.
func (s *Service) Topics() ([]string, error) { return s.store.Topics() }

func (s *Service) reporter() reporter {
	return reporter{grace: s.cfg.Grace, now: s.cfg.Now()}
}

// Windows reports topic's windows starting in [from, to) (zero: unbounded).
func (s *Service) Windows(topic string, from, to time.Time) ([]WindowReport, error) {
	all, err := s.store.Windows(topic, time.Time{}, time.Time{})
	if err != nil {
		return nil, err
	}
	r, first := s.reporter(), firstSeen(all)
	out := []WindowReport{}
	for _, w := range all {
		if (!from.IsZero() && w.Start.Before(from)) || (!to.IsZero() && !w.Start.Before(to)) {
			continue
		}
		out = append(out, r.report(w, first))
	}
	return out, nil
}

// Breakdown reports one window of topic with its per-cluster and
// per-instance counts.
func (s *Service) Breakdown(topic string, start time.Time) (Breakdown, error) {
	all, err := s.store.Windows(topic, time.Time{}, time.Time{})
	if err != nil {
		return Breakdown{}, err
	}
	for _, w := range all {
		if w.Start.Equal(start) {
			return s.reporter().breakdown(w, firstSeen(all)), nil
		}
	}
	return Breakdown{}, fmt.Errorf("%w: topic %s window %s", ErrNotFound, topic, start.UTC().Format(time.RFC3339Nano))
}
