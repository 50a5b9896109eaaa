package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/internal/coord"
)

// DefaultPollInterval is how often a scheduler looks for run requests and
// orphaned runs between due times.
const DefaultPollInterval = time.Second

// Config configures a Scheduler. Zero values mean defaults.
type Config struct {
	// Jobs to schedule (from LoadConfig or ParseConfig). Required.
	Jobs []Job
	// Connect opens a coordination session: zkcoord.Connect for ZooKeeper,
	// a memcoord server's Connect in one process. Called again after the
	// session expires. Required.
	Connect coord.SessionFactory
	// ID names this scheduler in run records. Default "<hostname>:<pid>".
	ID string
	// Executable is the tributary binary that runs loader, compact and
	// retention jobs. Default os.Executable().
	Executable string
	// Root is the node jobs' state lives under. Default DefaultRoot.
	Root string
	// HistoryLimit is how many runs per job are kept. Default DefaultHistoryLimit.
	HistoryLimit int
	// PollInterval: see DefaultPollInterval.
	PollInterval time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// Registerer receives the scheduler's metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	if len(c.Jobs) == 0 {
		errs = append(errs, fmt.Errorf("%w: no jobs", ErrInvalidConfig))
	}
	if c.Connect == nil {
		errs = append(errs, fmt.Errorf("%w: Connect is required", ErrInvalidConfig))
	}
	if c.HistoryLimit < 0 || c.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("%w: negative HistoryLimit or PollInterval", ErrInvalidConfig))
	}
	seen := map[string]bool{}
	for _, j := range c.Jobs {
		if j.schedule == nil {
			errs = append(errs, fmt.Errorf("%w: job %q was not validated (use ParseConfig or Spec.Validate)", ErrInvalidConfig, j.Name))
		}
		if seen[j.Name] {
			errs = append(errs, fmt.Errorf("%w: duplicate job %q", ErrInvalidConfig, j.Name))
		}
		seen[j.Name] = true
	}
	return errors.Join(errs...)
}

// Scheduler runs jobs on their schedules, agreeing with any number of other
// schedulers on the same coordination service that each due run starts
// once. See the package documentation for the protocol.
type Scheduler struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	tmpDir  string

	wg sync.WaitGroup // running executions
}

// New returns a Scheduler; Run starts it.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ID == "" {
		host, _ := os.Hostname()
		cfg.ID = host + ":" + strconv.Itoa(os.Getpid())
	}
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errNoExecutable, err)
		}
		cfg.Executable = exe
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{cfg: cfg, log: log.With("scheduler", cfg.ID), metrics: newMetrics(cfg.Registerer)}, nil
}

// ID is the scheduler's name in run records.
func (s *Scheduler) ID() string { return s.cfg.ID }

// Run schedules the jobs until ctx ends, then kills the runs still going
// (recording them failed) and returns nil. After a session expiry it kills
// its runs (their locks are gone) and starts over on a new session. It
// returns an error only if the first session cannot be opened.
func (s *Scheduler) Run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "tributary-jobs-")
	if err != nil {
		return err
	}
	s.tmpDir = dir
	defer os.RemoveAll(dir)
	for first := true; ; first = false {
		sess, err := s.cfg.Connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if first {
				// A wrong address or chroot should stop the start, not loop.
				return fmt.Errorf("jobs: coordination service: %w", err)
			}
			s.log.Warn("coordination session failed; retrying", "err", err)
			select {
			case <-time.After(time.Second):
				continue
			case <-ctx.Done():
				return nil
			}
		}
		err = s.runSession(ctx, sess)
		_ = sess.Close()
		if ctx.Err() != nil {
			return nil
		}
		s.log.Warn("coordination session ended; starting over", "err", err)
	}
}

// runSession runs every job's loop on one session until ctx ends or the
// session expires.
func (s *Scheduler) runSession(ctx context.Context, sess coord.Session) error {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	store := NewStore(sess, s.cfg.Root, s.cfg.HistoryLimit)
	for _, j := range s.cfg.Jobs {
		if err := store.Publish(sctx, j.Spec); err != nil {
			return err
		}
	}
	go func() {
		for {
			select {
			case st := <-sess.States():
				if st == coord.StateExpired {
					cancel(coord.ErrSessionExpired)
					return
				}
			case <-sctx.Done():
				return
			}
		}
	}()
	s.log.Info("scheduler started", "jobs", len(s.cfg.Jobs), "session", fmt.Sprintf("0x%x", sess.ID()))
	var loops sync.WaitGroup
	for _, j := range s.cfg.Jobs {
		loops.Add(1)
		go func() {
			defer loops.Done()
			s.jobLoop(sctx, store, j)
		}()
	}
	loops.Wait()
	s.wg.Wait() // executions end with sctx (killed, recorded failed if the session allows)
	return context.Cause(sctx)
}

// jobLoop waits for each due time of j and claims it; between due times it
// serves run requests and reaps orphaned runs.
func (s *Scheduler) jobLoop(ctx context.Context, store *Store, j Job) {
	log := s.log.With("job", j.Name)
	next := j.Next(time.Now())
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		wait := time.Until(next)
		if next.IsZero() || wait > s.cfg.PollInterval {
			wait = s.cfg.PollInterval
		}
		poll.Reset(max(wait, 0))
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		}
		if next.IsZero() {
			// The schedule had no due time within the five years
			// robfig/cron looks ahead; look again, serve requests meanwhile.
			next = j.Next(time.Now())
		}
		if now := time.Now(); !next.IsZero() && !now.Before(next) {
			due := next
			// A scheduler that slept through several due times (a stopped
			// or starved process) claims only the latest one, like cron,
			// and records the others skipped unless another scheduler
			// claimed them: every due time leaves one record.
			var missed []time.Time
			for n := j.Next(due); !n.IsZero() && !n.After(now); n = j.Next(n) {
				missed = append(missed, due)
				due = n
			}
			next = j.Next(due)
			if len(missed) > maxMissed {
				missed = missed[len(missed)-maxMissed:]
			}
			s.scheduled(ctx, store, j, due, missed, log)
		}
		s.serveRequests(ctx, store, j, log)
		if reaped, lastOK, err := store.reapOrphans(ctx, j.Name); err != nil && ctx.Err() == nil {
			log.Warn("checking for orphaned runs", "err", err)
		} else {
			// Whichever scheduler ran it, the gauge shows the job's last success.
			if !lastOK.IsZero() {
				s.metrics.lastSuccess.WithLabelValues(j.Name).Set(float64(lastOK.UnixNano()) / 1e9)
			}
			for _, r := range reaped {
				log.Warn("marked orphaned run failed", "run", r.ID, "scheduler_of_run", r.Scheduler)
				s.metrics.runs.WithLabelValues(j.Name, string(StatusFailed)).Inc()
				s.metrics.failures.WithLabelValues(j.Name).Inc()
			}
		}
	}
}

// maxMissed bounds the missed due times one wake-up records.
const maxMissed = 10

func (s *Scheduler) scheduled(ctx context.Context, store *Store, j Job, due time.Time, missed []time.Time, log *slog.Logger) {
	if j.Paused {
		return
	}
	paused, err := store.Paused(ctx, j.Name)
	if err != nil {
		log.Warn("reading pause state", "err", err)
		return
	}
	if paused {
		return
	}
	for _, m := range missed {
		now := time.Now().UTC()
		run := &Run{ID: runID(m, ""), Job: j.Name, ScheduledAt: m.UTC(), EndedAt: &now, Status: StatusSkipped, Scheduler: s.cfg.ID,
			Error: fmt.Sprintf("missed: no scheduler claimed it at its due time (this one woke at %s)", now.Format(time.RFC3339Nano))}
		if ok, err := store.recordSkipped(ctx, run); err != nil {
			log.Warn("recording a missed run", "run", run.ID, "err", err)
		} else if ok {
			log.Warn("due time missed", "run", run.ID)
			s.metrics.runs.WithLabelValues(j.Name, string(StatusSkipped)).Inc()
		}
	}
	s.start(ctx, store, j, due, "", log)
}

func (s *Scheduler) serveRequests(ctx context.Context, store *Store, j Job, log *slog.Logger) {
	reqs, err := store.requests(ctx, j.Name)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("reading run requests", "err", err)
		}
		return
	}
	for _, r := range reqs {
		s.start(ctx, store, j, time.Now(), r, log)
	}
}

// start claims the run due at due (or asked for by request) and, if won,
// executes it in the background.
func (s *Scheduler) start(ctx context.Context, store *Store, j Job, due time.Time, request string, log *slog.Logger) {
	now := time.Now().UTC()
	run := &Run{
		ID: runID(due, request), Job: j.Name, ScheduledAt: due.UTC(), StartedAt: &now,
		Status: StatusRunning, Scheduler: s.cfg.ID, Manual: request != "", Request: request,
	}
	outcome, version, err := store.claim(ctx, run, request)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("claiming run", "run", run.ID, "err", err)
		}
		return
	}
	switch outcome {
	case claimTaken:
		return
	case claimSkipped:
		log.Info("run skipped", "run", run.ID, "reason", run.Error)
		s.metrics.runs.WithLabelValues(j.Name, string(StatusSkipped)).Inc()
		return
	}
	log.Info("run started", "run", run.ID)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.execute(ctx, store, j, run, version, log)
	}()
}

// execute runs the attempts of a claimed run and records its end.
func (s *Scheduler) execute(ctx context.Context, store *Store, j Job, run *Run, version int32, log *slog.Logger) {
	summary := filepath.Join(s.tmpDir, run.Job+"."+run.ID+".summary.json")
	t, err := taskFor(j, s.cfg.Executable, summary)
	var res attemptResult
	var errs []string
	if err != nil {
		res.err = err
	} else {
		backoff := j.EffectiveBackoff()
		for attempt := 1; ; attempt++ {
			run.Attempts = attempt
			if attempt > 1 {
				if v, err := store.update(ctx, run, version); err == nil {
					version = v
				}
			}
			env := []string{
				EnvJobName + "=" + j.Name, EnvRunID + "=" + run.ID,
				EnvScheduledAt + "=" + run.ScheduledAt.Format(time.RFC3339Nano),
				EnvScheduler + "=" + s.cfg.ID, EnvAttempt + "=" + strconv.Itoa(attempt),
				EnvSummaryFile + "=" + summary,
			}
			res = runAttempt(ctx, t, env, summary, j.EffectiveTimeout())
			if res.err == nil || ctx.Err() != nil {
				break
			}
			errs = append(errs, fmt.Sprintf("attempt %d: %v", attempt, res.err))
			log.Warn("run attempt failed", "run", run.ID, "attempt", attempt, "err", res.err)
			if attempt > j.Retries {
				break
			}
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
			backoff *= 2
		}
	}
	end := time.Now().UTC()
	run.EndedAt = &end
	run.Summary = res.summary
	switch {
	case res.err == nil:
		run.Status = StatusSucceeded
	case res.timedOut:
		run.Status = StatusTimedOut
	default:
		run.Status = StatusFailed
	}
	if res.err != nil {
		if len(errs) == 0 || ctx.Err() != nil {
			errs = append(errs, res.err.Error())
		}
		run.Error = joinErrs(errs)
	}
	// Record the end even when ctx ended (shutdown): the session may still
	// be open. After an expiry the write fails and an orphan reaper records
	// the run failed instead.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := store.finish(wctx, run, version); err != nil {
		log.Warn("recording run end", "run", run.ID, "status", run.Status, "err", err)
	} else {
		log.Info("run ended", "run", run.ID, "status", run.Status, "attempts", run.Attempts)
	}
	s.metrics.runs.WithLabelValues(j.Name, string(run.Status)).Inc()
	s.metrics.observeSummary(j.Name, run.Summary)
	s.metrics.duration.WithLabelValues(j.Name, string(run.Status)).Observe(end.Sub(*run.StartedAt).Seconds())
	if run.Status == StatusSucceeded {
		s.metrics.lastSuccess.WithLabelValues(j.Name).Set(float64(end.UnixNano()) / 1e9)
	} else {
		s.metrics.failures.WithLabelValues(j.Name).Inc()
	}
}

func joinErrs(errs []string) string {
	out := ""
	for i, e := range errs {
		if i > 0 {
			out += "; "
		}
		out += e
	}
	return out
}
