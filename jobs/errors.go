package jobs

import "errors"

var (
	// ErrInvalidConfig: the jobs configuration is invalid; the wrapping error names the job and the field.
	ErrInvalidConfig = errors.New("jobs: invalid configuration")
	// ErrUnknownJob: no job of that name is defined in ZooKeeper.
	ErrUnknownJob = errors.New("jobs: unknown job")
	// ErrTimedOut: a run's attempt exceeded the job's timeout and was killed.
	ErrTimedOut = errors.New("jobs: run timed out")
	// ErrNotFinished: a requested run was not finished within the caller's wait.
	ErrNotFinished = errors.New("jobs: run not finished")
)
