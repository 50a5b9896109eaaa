// Package jobs is Tributary's highly available job scheduler: it runs
// loader, compaction, retention and user jobs on cron schedules, each due
// run exactly once across any number of schedulers sharing one ZooKeeper
// (or one in-process coordination server), and keeps every job's history
// there.
//
// # Configuration
//
// A YAML file with a "jobs" list (ParseConfig, LoadConfig); each job has a
// name, a schedule (robfig/cron/v3: five or six fields, seconds optional,
// or a descriptor such as "@every 5m" or "@hourly", UTC), a kind (loader,
// compact, retention or exec), its args, a per-attempt timeout, retries
// with an exponential retry_backoff, and paused. Unknown keys and invalid
// values are errors naming the job and the field (FieldError). LoadConfig
// also refuses a job whose config, hdfs_config or tables_config file does
// not exist on this machine (CheckFiles), before any run is due.
//
// "@every D" is aligned to multiples of D since the Unix epoch (not to the
// scheduler's start), so that all schedulers compute the same due times.
//
// # ZooKeeper layout (frozen), under Config.Root (default /jobs)
//
//	/jobs/<job>                 the job's definition (JSON Spec), written by every scheduler at start
//	/jobs/<job>/runs/<id>       one run (JSON Run); id = <13-digit Unix ms of the due time>-s
//	                            for a scheduled run, -m-<request> for a `jobs run`
//	/jobs/<job>/lock            ephemeral while a run executes: {"run": id, "scheduler": ...}
//	/jobs/<job>/paused          exists while `jobs pause` holds the job
//	/jobs/<job>/requests/r-NNN  persistent sequential: a `jobs run` request not yet taken
//
// # Exactly once
//
// Every scheduler wakes at each due time T and tries one atomic multi-op:
// create runs/<id(T)> (status running) and create the ephemeral lock. The
// run node's name is derived from T, so only one scheduler's multi-op can
// succeed; the lock makes a run that is still going when the next is due
// fail the multi-op too, and that next run is then recorded once as
// skipped (create-if-absent of the same run node). The end of a run is
// another multi-op: the final record (compare-and-set on the version the
// scheduler wrote) and the lock's deletion. So a "running" record exists
// exactly while its lock does, except when a scheduler's session ends
// mid-run: its lock vanishes with the session and the record stays
// "running". Every scheduler looks for such orphans at each poll and marks
// them failed (compare-and-set, so a record that changes meanwhile is left
// alone). The next due time then runs on whichever scheduler wins it.
//
// A run request (`jobs run`) is taken the same way, with the request
// node's deletion in the multi-op so that one scheduler takes it. Manual
// runs happen even while a job is paused.
//
// A scheduler that sleeps through several due times (stopped, starved)
// claims only the latest, as cron does, and records the missed ones (the
// last 10) as skipped with an error starting "missed", unless another
// scheduler claimed them. Due times while every scheduler was down leave
// no record beyond those 10.
//
// # Runs
//
// Every kind runs as a child process in its own process group: loader as
// `tributary loader run --config C --summary-json F`, compact as
// `tributary jobs compact ...`, retention as `tributary jobs retention ...`
// and exec as the given command. A crash of the job never takes the
// scheduler down; at the timeout the whole group is SIGKILLed (status
// timed_out); the child gets SIGKILL too if the scheduler dies
// (Pdeathsig), so a dead scheduler's job does not go on without its lock.
// A failed attempt is retried up to retries times, waiting retry_backoff,
// doubled each time; the record's error lists every failed attempt with
// the tail of its output. The summary is the JSON object the job wrote to
// the file named by $TRIBUTARY_JOB_SUMMARY (loader, compact and retention
// do), else its last output line if that is a JSON object.
//
// History keeps the last Config.HistoryLimit (default 100) runs per job.
//
// # Metrics
//
// tributary_jobs_runs_total{job,status}, tributary_jobs_failures_total{job},
// tributary_jobs_run_duration_seconds and
// tributary_jobs_last_success_timestamp_seconds; and, from each run's
// summary, tributary_jobs_tables_schema_blocked{job,topic}: 1 for each
// topic the latest run's summary lists in tables_schema_blocked (a compact
// run whose table registration a schema change stopped), 0 once a later
// run's summary no longer lists it. A run without a summary changes no
// gauge.
//
// # Concurrency
//
// A Scheduler is one goroutine per job plus one per executing run; Store
// is safe for concurrent use. Run returns after killing its runs when its
// context ends; a session expiry kills the runs (their locks are gone)
// and the scheduler starts over on a new session.
//
// # Compaction and readers
//
// Package compact marks the loader's closed hours ready (_SUCCESS) once
// the audit service proves them complete, turns ready hours into Parquet
// in a generation directory of their own and syncs a table catalog;
// package hours states the rule every reader of the output must follow
// (an hour without a "_compacted" marker is its loader files; with it, the
// Parquet files of the generation its manifest names plus loader files it
// does not name) and names, parses and lists the files for everyone, which
// makes each hour visible either as Avro or as Parquet, never both nor
// neither, at every step of a compaction and after a crash at any of them.
// Package retention deletes old hours.
package jobs
