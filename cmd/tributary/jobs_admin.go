package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/jobs"
)

// jobsAdminOptions are the flags shared by list, history, run, pause and resume.
type jobsAdminOptions struct {
	zookeeper string
	timeout   time.Duration
}

func (o *jobsAdminOptions) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.zookeeper, "zookeeper", "", "ZooKeeper connect string HOST:PORT[,HOST:PORT...][/chroot] (required)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 30*time.Second, "bound on ZooKeeper calls")
}

// store connects and returns the jobs store and a function closing it.
func (o jobsAdminOptions) store(ctx context.Context) (*jobs.Store, func(), error) {
	if o.zookeeper == "" {
		return nil, nil, errors.New("--zookeeper is required")
	}
	sess, err := zkcoord.Connect(ctx, o.zookeeper, zkcoord.Config{SessionTimeout: 10 * time.Second, ConnectionTimeout: o.timeout})
	if err != nil {
		return nil, nil, fmt.Errorf("zookeeper: %w", err)
	}
	return jobs.NewStore(sess, "", 0), func() { _ = sess.Close() }, nil
}

func newJobsListCommand() *cobra.Command {
	var o jobsAdminOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list --zookeeper HOST:PORT[/chroot]",
		Short: "List jobs: schedule, kind, paused, last run and status, next run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			st, done, err := o.store(ctx)
			if err != nil {
				return err
			}
			defer done()
			rows, err := st.List(ctx, time.Now())
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if rows == nil {
					rows = []jobs.Listing{}
				}
				return enc.Encode(rows)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tKIND\tSCHEDULE\tPAUSED\tLAST RUN\tSTATUS\tNEXT RUN")
			for _, r := range rows {
				last, status := "-", "-"
				if r.Last != nil {
					last, status = r.Last.ScheduledAt.Format(time.RFC3339), string(r.Last.Status)
				}
				next := "-"
				if r.Next != nil {
					next = r.Next.Format(time.RFC3339)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%s\t%s\t%s\n", r.Name, r.Kind, r.Schedule, r.Paused, last, status, next)
			}
			return w.Flush()
		},
	}
	o.flags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func newJobsHistoryCommand() *cobra.Command {
	var o jobsAdminOptions
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "history NAME --zookeeper HOST:PORT[/chroot] [--json]",
		Short: "Show a job's runs, oldest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			st, done, err := o.store(ctx)
			if err != nil {
				return err
			}
			defer done()
			runs, err := st.History(ctx, args[0], limit)
			if err != nil {
				return err
			}
			if asJSON {
				if runs == nil {
					runs = []jobs.Run{}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(runs)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "SCHEDULED AT\tSTATUS\tSCHEDULER\tATTEMPTS\tDURATION\tSUMMARY/ERROR")
			for _, r := range runs {
				dur := "-"
				if r.StartedAt != nil && r.EndedAt != nil {
					dur = r.EndedAt.Sub(*r.StartedAt).Round(time.Millisecond).String()
				}
				detail := string(r.Summary)
				if r.Error != "" {
					detail = r.Error
				}
				if len(detail) > 120 {
					detail = detail[:117] + "..."
				}
				at := r.ScheduledAt.Format(time.RFC3339)
				if r.Manual {
					at += " (manual)"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\n", at, r.Status, r.Scheduler, r.Attempts, dur, detail)
			}
			return w.Flush()
		},
	}
	o.flags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of runs (scheduled_at, started_at, ended_at, status, scheduler, attempts, summary, error, ...)")
	cmd.Flags().IntVar(&limit, "limit", 0, "show only the last N runs (0: all kept)")
	return cmd
}

func newJobsRunCommand() *cobra.Command {
	var o jobsAdminOptions
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "run NAME --zookeeper HOST:PORT[/chroot] [--wait 1h]",
		Short: "Run a job now on one of the schedulers (through the job's lock) and wait for its end",
		Long: "Ask the running schedulers to run NAME now. One of them takes the request, through the same lock " +
			"as scheduled runs: if the job is already running, the request is recorded skipped. Waits up to --wait " +
			"for the run's end (0: return once requested) and exits non-zero unless it succeeded. A manual run " +
			"also happens while the job is paused.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout+wait)
			defer cancel()
			st, done, err := o.store(ctx)
			if err != nil {
				return err
			}
			defer done()
			req, err := st.Request(ctx, args[0])
			if err != nil {
				return err
			}
			if wait == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "requested %s (request %s)\n", args[0], req)
				return nil
			}
			run, err := st.WaitRequest(ctx, args[0], req, wait)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s on %s", args[0], run.Status, run.Scheduler)
			if len(run.Summary) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), " %s", run.Summary)
			}
			fmt.Fprintln(cmd.OutOrStdout())
			if run.Status != jobs.StatusSucceeded {
				return fmt.Errorf("run %s %s: %s", run.ID, run.Status, run.Error)
			}
			return nil
		},
	}
	o.flags(cmd)
	cmd.Flags().DurationVar(&wait, "wait", time.Hour, "how long to wait for the run's end (0: do not wait)")
	return cmd
}

func newJobsPauseCommand(pause bool) *cobra.Command {
	var o jobsAdminOptions
	use, short := "resume", "Resume a paused job's scheduled runs"
	if pause {
		use, short = "pause", "Pause a job's scheduled runs on every scheduler (a run going on is not stopped)"
	}
	cmd := &cobra.Command{
		Use:   use + " NAME --zookeeper HOST:PORT[/chroot]",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			st, done, err := o.store(ctx)
			if err != nil {
				return err
			}
			defer done()
			if pause {
				err = st.Pause(ctx, args[0])
			} else {
				err = st.Resume(ctx, args[0])
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %sd\n", args[0], use)
			return nil
		},
	}
	o.flags(cmd)
	return cmd
}
