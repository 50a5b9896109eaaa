package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// Status of a run.
type Status string

const (
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusSkipped   Status = "skipped"
	StatusTimedOut  Status = "timed_out"
)

// DefaultRoot is the ZooKeeper node under which jobs keep their state.
const DefaultRoot = "/jobs"

// DefaultHistoryLimit is how many runs per job the history keeps.
const DefaultHistoryLimit = 100

// Run is one entry of a job's history, stored as JSON in
// <root>/<job>/runs/<id>.
type Run struct {
	ID          string          `json:"id"`
	Job         string          `json:"job"`
	ScheduledAt time.Time       `json:"scheduled_at"`
	StartedAt   *time.Time      `json:"started_at"`
	EndedAt     *time.Time      `json:"ended_at"`
	Status      Status          `json:"status"`
	Scheduler   string          `json:"scheduler"`
	Manual      bool            `json:"manual,omitempty"`
	Request     string          `json:"request,omitempty"`
	Attempts    int             `json:"attempts,omitempty"`
	Summary     json.RawMessage `json:"summary,omitempty"`
	Error       string          `json:"error,omitempty"`
}

// lockData is the content of the ephemeral <root>/<job>/lock.
type lockData struct {
	Run       string `json:"run"`
	Scheduler string `json:"scheduler"`
}

// Store reads and writes jobs' state in the coordination service. It is
// what `tributary jobs list|history|run|pause|resume` use; the scheduler
// uses it too. Safe for concurrent use.
type Store struct {
	sess  coord.Session
	root  string
	limit int
}

// NewStore returns a Store under root (DefaultRoot when "") keeping limit runs
// per job (DefaultHistoryLimit when 0).
func NewStore(sess coord.Session, root string, limit int) *Store {
	if root == "" {
		root = DefaultRoot
	}
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	return &Store{sess: sess, root: root, limit: limit}
}

func (s *Store) jobPath(job string) string      { return coord.Join(s.root, job) }
func (s *Store) runsPath(job string) string     { return coord.Join(s.root, job, "runs") }
func (s *Store) runPath(job, id string) string  { return coord.Join(s.root, job, "runs", id) }
func (s *Store) lockPath(job string) string     { return coord.Join(s.root, job, "lock") }
func (s *Store) pausedPath(job string) string   { return coord.Join(s.root, job, "paused") }
func (s *Store) requestsPath(job string) string { return coord.Join(s.root, job, "requests") }

// runID names a run so that names sort by time: 13-digit Unix milliseconds
// of the due time, then "s" for a scheduled run or "m-<request>" for one
// asked for by `jobs run`. Every scheduler derives the same ID for the same
// due time, which is what makes a run start once.
func runID(scheduled time.Time, request string) string {
	id := fmt.Sprintf("%013d-", scheduled.UnixMilli())
	if request == "" {
		return id + "s"
	}
	return id + "m-" + request
}

// Publish writes a job's definition to <root>/<job> (for `jobs list`) and
// makes its runs and requests nodes.
func (s *Store) Publish(ctx context.Context, spec Spec) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	for _, p := range []string{s.runsPath(spec.Name), s.requestsPath(spec.Name)} {
		if _, err := s.sess.CreateAll(ctx, p, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
			return fmt.Errorf("jobs: publish %s: %w", spec.Name, err)
		}
	}
	if _, err := s.sess.Set(ctx, s.jobPath(spec.Name), data, coord.AnyVersion); err != nil {
		return fmt.Errorf("jobs: publish %s: %w", spec.Name, err)
	}
	return nil
}

// Jobs returns the published job definitions, sorted by name.
func (s *Store) Jobs(ctx context.Context) ([]Spec, error) {
	names, _, err := s.sess.Children(ctx, s.root)
	if errors.Is(err, coord.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Spec
	for _, n := range names {
		data, _, err := s.sess.Get(ctx, s.jobPath(n))
		if err != nil {
			if errors.Is(err, coord.ErrNoNode) {
				continue
			}
			return nil, err
		}
		var spec Spec
		if len(data) == 0 || json.Unmarshal(data, &spec) != nil {
			continue
		}
		out = append(out, spec)
	}
	return out, nil
}

// Job returns one published definition.
func (s *Store) Job(ctx context.Context, name string) (Spec, error) {
	data, _, err := s.sess.Get(ctx, s.jobPath(name))
	if errors.Is(err, coord.ErrNoNode) || (err == nil && len(data) == 0) {
		return Spec{}, fmt.Errorf("%w: %q (no scheduler has published it)", ErrUnknownJob, name)
	}
	if err != nil {
		return Spec{}, err
	}
	var spec Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return Spec{}, fmt.Errorf("jobs: definition of %q: %w", name, err)
	}
	return spec, nil
}

// History returns up to the last n runs of job, oldest first (all kept when n <= 0).
func (s *Store) History(ctx context.Context, job string, n int) ([]Run, error) {
	runs, _, err := s.history(ctx, job, n)
	return runs, err
}

func (s *Store) history(ctx context.Context, job string, n int) ([]Run, []int32, error) {
	ids, _, err := s.sess.Children(ctx, s.runsPath(job))
	if errors.Is(err, coord.ErrNoNode) {
		if _, err := s.Job(ctx, job); err != nil {
			return nil, nil, err
		}
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(ids)
	if n > 0 && len(ids) > n {
		ids = ids[len(ids)-n:]
	}
	var runs []Run
	var versions []int32
	for _, id := range ids {
		data, st, err := s.sess.Get(ctx, s.runPath(job, id))
		if errors.Is(err, coord.ErrNoNode) {
			continue // trimmed meanwhile
		}
		if err != nil {
			return nil, nil, err
		}
		var r Run
		if err := json.Unmarshal(data, &r); err != nil {
			continue
		}
		runs = append(runs, r)
		versions = append(versions, st.Version)
	}
	return runs, versions, nil
}

// Paused reports whether `jobs pause` paused the job.
func (s *Store) Paused(ctx context.Context, job string) (bool, error) {
	ok, _, err := s.sess.Exists(ctx, s.pausedPath(job))
	return ok, err
}

// Pause stops scheduled runs of job (on every scheduler) until Resume.
func (s *Store) Pause(ctx context.Context, job string) error {
	if _, err := s.Job(ctx, job); err != nil {
		return err
	}
	_, err := s.sess.Create(ctx, s.pausedPath(job), nil, coord.Persistent)
	if errors.Is(err, coord.ErrNodeExists) {
		return nil
	}
	return err
}

// Resume undoes Pause.
func (s *Store) Resume(ctx context.Context, job string) error {
	if _, err := s.Job(ctx, job); err != nil {
		return err
	}
	err := s.sess.Delete(ctx, s.pausedPath(job), coord.AnyVersion)
	if errors.Is(err, coord.ErrNoNode) {
		return nil
	}
	return err
}

// Request asks the schedulers to run job now; it returns the request's name,
// which the resulting Run carries in its Request field.
func (s *Store) Request(ctx context.Context, job string) (string, error) {
	if _, err := s.Job(ctx, job); err != nil {
		return "", err
	}
	data, _ := json.Marshal(map[string]any{"requested_at": time.Now().UTC()})
	p, err := s.sess.Create(ctx, coord.Join(s.requestsPath(job), "r-"), data, coord.PersistentSequential)
	if err != nil {
		return "", fmt.Errorf("jobs: request a run of %s: %w", job, err)
	}
	return coord.Base(p), nil
}

// FindRequest returns the run made for request, if any yet.
func (s *Store) FindRequest(ctx context.Context, job, request string) (*Run, error) {
	ids, _, err := s.sess.Children(ctx, s.runsPath(job))
	if err != nil {
		return nil, err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		if strings.HasSuffix(ids[i], "-m-"+request) {
			data, _, err := s.sess.Get(ctx, s.runPath(job, ids[i]))
			if err != nil {
				return nil, err
			}
			var r Run
			if err := json.Unmarshal(data, &r); err != nil {
				return nil, err
			}
			return &r, nil
		}
	}
	return nil, nil
}

// claimOutcome says what claim did.
type claimOutcome int

const (
	claimWon     claimOutcome = iota // this scheduler runs it
	claimTaken                       // another scheduler claimed (or recorded) it
	claimSkipped                     // recorded as skipped: the job was still running
)

// claim records run as running and takes the job's lock in one atomic
// multi-op, so that a "running" record exists exactly while its lock does
// (until a session expires, which leaves an orphan for reapOrphans). For a
// requested run, the request node is deleted in the same op, so a request
// is taken once. If the lock is held, the run is recorded skipped instead.
// Returns the record's version when won.
func (s *Store) claim(ctx context.Context, run *Run, request string) (claimOutcome, int32, error) {
	for attempt := 1; ; attempt++ {
		outcome, version, err := s.claimOnce(ctx, run, request, attempt < claimAttempts)
		if !errors.Is(err, errLockReleased) {
			return outcome, version, err
		}
	}
}

// claimAttempts bounds the claims of one run that find the lock held and
// then released before they can read whose it was.
const claimAttempts = 3

// errLockReleased: a claim found the job's lock held, and gone when it
// read whose it was; the claim is tried again (the run may go ahead now).
var errLockReleased = errors.New("jobs: lock released during the claim")

// claimOnce is one claim; with retry, a lock released between the failed
// create and the read of its holder returns errLockReleased instead of a
// skipped record naming no run.
func (s *Store) claimOnce(ctx context.Context, run *Run, request string, retry bool) (claimOutcome, int32, error) {
	data, _ := json.Marshal(run)
	lock, _ := json.Marshal(lockData{Run: run.ID, Scheduler: run.Scheduler})
	ops := []coord.Op{
		{Kind: coord.OpCreate, Path: s.runPath(run.Job, run.ID), Data: data, Mode: coord.Persistent},
		{Kind: coord.OpCreate, Path: s.lockPath(run.Job), Data: lock, Mode: coord.Ephemeral},
	}
	if request != "" {
		ops = append(ops, coord.Op{Kind: coord.OpDelete, Path: coord.Join(s.requestsPath(run.Job), request), Version: coord.AnyVersion})
	}
	err := s.sess.Multi(ctx, ops...)
	if err == nil {
		s.trim(ctx, run.Job)
		return claimWon, 0, nil
	}
	if errors.Is(err, coord.ErrUnavailable) {
		// Ambiguous: the multi may have been applied. It was ours if the lock
		// is ours and names this run.
		if l, owner, lerr := s.readLock(ctx, run.Job); lerr == nil && owner == s.sess.ID() && l.Run == run.ID {
			return claimWon, 0, nil
		}
		return claimTaken, 0, err
	}
	if ok, _, xerr := s.sess.Exists(ctx, s.runPath(run.Job, run.ID)); xerr != nil {
		return claimTaken, 0, xerr
	} else if ok {
		return claimTaken, 0, nil
	}
	if request != "" {
		if ok, _, xerr := s.sess.Exists(ctx, coord.Join(s.requestsPath(run.Job), request)); xerr != nil || !ok {
			return claimTaken, 0, xerr
		}
	}
	// The lock is held: record the run as skipped, once.
	held, _, lerr := s.readLock(ctx, run.Job)
	if errors.Is(lerr, coord.ErrNoNode) && retry {
		return claimTaken, 0, errLockReleased
	}
	now := time.Now().UTC()
	skipped := *run
	skipped.Status = StatusSkipped
	skipped.StartedAt, skipped.EndedAt = nil, &now
	skipped.Error = fmt.Sprintf("previous run %s still running on %s", held.Run, held.Scheduler)
	data, _ = json.Marshal(skipped)
	ops = ops[:1]
	ops[0].Data = data
	if request != "" {
		ops = append(ops, coord.Op{Kind: coord.OpDelete, Path: coord.Join(s.requestsPath(run.Job), request), Version: coord.AnyVersion})
	}
	if err := s.sess.Multi(ctx, ops...); err != nil {
		if errors.Is(err, coord.ErrNodeExists) || errors.Is(err, coord.ErrNoNode) {
			return claimTaken, 0, nil
		}
		return claimTaken, 0, err
	}
	*run = skipped
	s.trim(ctx, run.Job)
	return claimSkipped, 0, nil
}

// recordSkipped creates run's record unless one exists (another scheduler
// claimed or recorded that due time); reports whether it did.
func (s *Store) recordSkipped(ctx context.Context, run *Run) (bool, error) {
	data, _ := json.Marshal(run)
	_, err := s.sess.Create(ctx, s.runPath(run.Job, run.ID), data, coord.Persistent)
	if errors.Is(err, coord.ErrNodeExists) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s.trim(ctx, run.Job)
	return true, nil
}

func (s *Store) readLock(ctx context.Context, job string) (lockData, int64, error) {
	data, st, err := s.sess.Get(ctx, s.lockPath(job))
	if err != nil {
		return lockData{}, 0, err
	}
	var l lockData
	_ = json.Unmarshal(data, &l)
	return l, st.EphemeralOwner, nil
}

// finish writes run's final record and releases the lock in one multi-op.
// It fails (and writes nothing) if the record changed since version, e.g.
// because the session expired and another scheduler marked it failed.
func (s *Store) finish(ctx context.Context, run *Run, version int32) error {
	data, _ := json.Marshal(run)
	return s.sess.Multi(ctx,
		coord.Op{Kind: coord.OpSet, Path: s.runPath(run.Job, run.ID), Data: data, Version: version},
		coord.Op{Kind: coord.OpDelete, Path: s.lockPath(run.Job), Version: coord.AnyVersion},
	)
}

// update rewrites a running record (e.g. its attempt count) and returns the new version.
func (s *Store) update(ctx context.Context, run *Run, version int32) (int32, error) {
	data, _ := json.Marshal(run)
	st, err := s.sess.Set(ctx, s.runPath(run.Job, run.ID), data, version)
	return st.Version, err
}

// orphanScan is how many of the newest runs reapOrphans looks at.
const orphanScan = 5

// reapOrphans marks failed every recent "running" record of job whose lock
// is gone or names another run: its scheduler's session ended without
// finishing it. The record is read before the lock, and rewritten only at
// the version read, so a run that finishes or starts meanwhile is never
// touched. Returns the runs it marked, and the end of the newest
// successful run among those it read (zero if none).
func (s *Store) reapOrphans(ctx context.Context, job string) ([]Run, time.Time, error) {
	runs, versions, err := s.history(ctx, job, orphanScan)
	if err != nil {
		return nil, time.Time{}, err
	}
	var lastOK time.Time
	for _, r := range runs {
		if r.Status == StatusSucceeded && r.EndedAt != nil && r.EndedAt.After(lastOK) {
			lastOK = *r.EndedAt
		}
	}
	var reaped []Run
	for i, r := range runs {
		if r.Status != StatusRunning {
			continue
		}
		l, _, err := s.readLock(ctx, job)
		if err == nil && l.Run == r.ID {
			continue
		}
		if err != nil && !errors.Is(err, coord.ErrNoNode) {
			return reaped, lastOK, err
		}
		now := time.Now().UTC()
		r.Status = StatusFailed
		r.EndedAt = &now
		r.Error = fmt.Sprintf("scheduler %s lost its ZooKeeper session (or died) while the run was going; its lock is gone", r.Scheduler)
		data, _ := json.Marshal(r)
		if _, err := s.sess.Set(ctx, s.runPath(job, r.ID), data, versions[i]); err != nil {
			if errors.Is(err, coord.ErrBadVersion) || errors.Is(err, coord.ErrNoNode) {
				continue
			}
			return reaped, lastOK, err
		}
		reaped = append(reaped, r)
	}
	return reaped, lastOK, nil
}

// Requests lists pending run requests of job, oldest first.
func (s *Store) requests(ctx context.Context, job string) ([]string, error) {
	ids, _, err := s.sess.Children(ctx, s.requestsPath(job))
	if errors.Is(err, coord.ErrNoNode) {
		return nil, nil
	}
	return ids, err
}

// trim deletes the oldest runs beyond the history limit. Best effort: a
// failed delete is retried by the next trim.
func (s *Store) trim(ctx context.Context, job string) {
	ids, _, err := s.sess.Children(ctx, s.runsPath(job))
	if err != nil || len(ids) <= s.limit {
		return
	}
	sort.Strings(ids)
	for _, id := range ids[:len(ids)-s.limit] {
		_ = s.sess.Delete(ctx, s.runPath(job, id), coord.AnyVersion)
	}
}
