package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary/tributary/audit/service"
)

// errIncomplete is returned when a closed window in range misses records.
var errIncomplete = errors.New("incomplete windows")

type auditReportOptions struct {
	server  string
	topic   string
	from    string
	to      string
	json    bool
	timeout time.Duration
}

func newAuditReportCommand() *cobra.Command {
	o := &auditReportOptions{}
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Print a topic's audit windows; exit non-zero if a closed window is incomplete",
		Long: "report asks the audit service for the windows of --topic starting in [--from, --to) and\n" +
			"prints, per window, the producer total, each tier's total and completeness, and a status.\n" +
			"It exits with status 1 when a closed window in range misses records at some tier.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			return o.run(ctx, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.server, "server", "http://127.0.0.1:8090", "URL of the audit service")
	fs.StringVar(&o.topic, "topic", "", "topic to report (required)")
	fs.StringVar(&o.from, "from", "", "first window start: RFC 3339, or a duration ago like 2h (default: all)")
	fs.StringVar(&o.to, "to", "", "windows starting before this: RFC 3339, or a duration ago (default: all)")
	fs.BoolVar(&o.json, "json", false, "print a JSON array instead of a table")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long the request may take")
	return cmd
}

// parseWhen reads RFC 3339 or a duration before now.
func parseWhen(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, badFlag(flag, s, "want RFC 3339 (2026-01-02T15:04:05Z) or a duration ago (90m)")
}

func (o *auditReportOptions) run(ctx context.Context, out io.Writer) error {
	if o.topic == "" {
		return fmt.Errorf("%w: --topic is required", errBadFlag)
	}
	base, err := url.Parse(o.server)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return badFlag("server", o.server, "want http://HOST:PORT")
	}
	now := time.Now()
	from, err := parseWhen("from", o.from, now)
	if err != nil {
		return err
	}
	to, err := parseWhen("to", o.to, now)
	if err != nil {
		return err
	}
	q := url.Values{}
	if !from.IsZero() {
		q.Set("from", from.UTC().Format(time.RFC3339Nano))
	}
	if !to.IsZero() {
		q.Set("to", to.UTC().Format(time.RFC3339Nano))
	}
	u := base.JoinPath("api", "topics", o.topic, "windows")
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("audit report: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("audit report: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("audit report: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var reps []service.WindowReport
	if err := json.Unmarshal(body, &reps); err != nil {
		return fmt.Errorf("audit report: bad answer from %s: %w", o.server, err)
	}
	if len(reps) == 0 {
		if err := o.checkSeen(ctx); err != nil {
			return err
		}
	}
	if o.json {
		if _, err := out.Write(body); err != nil {
			return err
		}
	} else if err := printReportTable(out, reps); err != nil {
		return err
	}
	bad := 0
	for _, r := range reps {
		if r.Incomplete() {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%w: %d closed window(s) of %s miss records", errIncomplete, bad, o.topic)
	}
	return nil
}

// checkSeen fails when the audit has no counts of the topic at all (a
// mistyped --topic reads as a report without windows), listing the topics
// it has.
func (o *auditReportOptions) checkSeen(ctx context.Context) error {
	c, err := service.NewClient(o.server, nil)
	if err != nil {
		return err
	}
	seen, err := c.Topics(ctx)
	if err != nil {
		return fmt.Errorf("audit report: %w", err)
	}
	if slices.Contains(seen, o.topic) {
		return nil
	}
	return fmt.Errorf("audit report: --topic %q: the audit has no counts of this topic (%s)", o.topic,
		listOr(seen, "topics it has", "it has counts of no topic yet"))
}

func printReportTable(out io.Writer, reps []service.WindowReport) error {
	tierSet := map[string]bool{}
	for _, r := range reps {
		for _, t := range r.Tiers {
			tierSet[t.Tier] = true
		}
	}
	var tiers []string
	for t := range tierSet {
		tiers = append(tiers, t)
	}
	sort.Strings(tiers)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "WINDOW START\tPRODUCER\t")
	for _, t := range tiers {
		fmt.Fprintf(tw, "%s\t%s %%\t", strings.ToUpper(t), strings.ToUpper(t))
	}
	fmt.Fprint(tw, "MISSING\tSURPLUS\tSTATUS\t\n")
	for _, r := range reps {
		fmt.Fprintf(tw, "%s\t%d\t", r.WindowStart.UTC().Format(time.RFC3339), r.Producer)
		var missing, surplus int64
		byTier := map[string]service.TierReport{}
		for _, t := range r.Tiers {
			byTier[t.Tier] = t
			missing += t.Missing
			surplus += t.Surplus
		}
		for _, name := range tiers {
			t, ok := byTier[name]
			switch {
			case !ok:
				fmt.Fprint(tw, "-\t-\t")
			case t.Completeness == nil:
				fmt.Fprintf(tw, "%d\t-\t", t.Count)
			default:
				fmt.Fprintf(tw, "%d\t%.3f%%\t", t.Count, 100**t.Completeness)
			}
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t\n", missing, surplus, r.Status)
	}
	return tw.Flush()
}
