package compact

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
)

// markReady writes _SUCCESS into every closed hour of topic that the audit
// proves complete, or whose completeness.timeout has passed; it returns
// how many it marked.
func (c *Compactor) markReady(ctx context.Context, topic string, list []hours.Hour, closed time.Time, sum *Summary) (int, error) {
	var pending []hours.Hour
	for _, h := range list {
		if h.End().Add(c.cfg.Delay).After(closed) {
			continue
		}
		ok, err := filesys.Exists(c.cfg.FS, path.Join(h.Dir, hours.SuccessMarker))
		if err != nil {
			return 0, err
		}
		if !ok {
			pending = append(pending, h)
		}
	}
	if len(pending) == 0 {
		return 0, nil
	}
	var windows []hours.AuditWindow
	if c.cfg.Audit != nil {
		var err error
		from, to := pending[0].Start.Add(-hours.AuditLookback), pending[len(pending)-1].End()
		if windows, err = c.cfg.Audit.Windows(ctx, topic, from, to); err != nil {
			// Without the audit nothing is proved; hours wait (their
			// timeouts still count from their ends).
			c.log.Warn("audit service unreachable; hours wait for it", "topic", topic, "err", err)
			sum.HoursFailed = append(sum.HoursFailed, topic+": audit: "+err.Error())
			return 0, nil
		}
	}
	now := c.cfg.Now().UTC()
	marked := 0
	for _, h := range pending {
		s := c.judge(h, windows, closed, now)
		if s == nil {
			continue
		}
		b, _ := json.MarshalIndent(s, "", "  ")
		if err := filesys.WriteFile(c.cfg.FS, path.Join(h.Dir, hours.SuccessTmp), b); err != nil {
			return marked, err
		}
		c.step("write " + hours.SuccessTmp)
		if err := c.cfg.FS.Rename(path.Join(h.Dir, hours.SuccessTmp), path.Join(h.Dir, hours.SuccessMarker)); err != nil {
			return marked, err
		}
		c.step("ready " + h.String())
		marked++
		if s.State == hours.StateReady {
			sum.HoursReady = append(sum.HoursReady, h.String())
		} else {
			sum.HoursIncomplete = append(sum.HoursIncomplete, fmt.Sprintf("%s: shortfall %d", h.String(), s.Shortfall))
			c.log.Warn("hour published ready-incomplete at completeness.timeout", "hour", h.String(),
				"producer", s.Producer, "loader", s.Loader, "shortfall", s.Shortfall)
		}
	}
	return marked, nil
}

// judge decides a closed hour's readiness: the _SUCCESS content, or nil
// while it waits for the audit.
func (c *Compactor) judge(h hours.Hour, windows []hours.AuditWindow, closed, now time.Time) *hours.Success {
	s := &hours.Success{Version: hours.SuccessVersion, Topic: h.Topic, Start: h.Start, End: h.End(),
		Threshold: c.cfg.Threshold, ClosedThrough: closed, ReadyAt: now}
	if c.cfg.Audit == nil {
		s.State, s.Basis = hours.StateReady, hours.BasisUnaudited
		return s
	}
	complete := true
	for _, w := range windows {
		if !w.End.After(h.Start) || !w.Start.Before(h.End()) {
			continue
		}
		s.Windows = append(s.Windows, w)
		s.Producer += w.Producer
		s.Loader += w.Loader
		if d := w.Producer - w.Loader; d > 0 {
			s.Shortfall += d
		}
		if float64(w.Loader) < c.cfg.Threshold*float64(w.Producer) {
			complete = false
		}
	}
	// Nothing is proved without producer counts.
	if complete && s.Producer > 0 {
		s.State, s.Basis = hours.StateReady, hours.BasisAudit
		return s
	}
	if !now.Before(h.End().Add(c.cfg.Timeout)) {
		s.State, s.Basis = hours.StateReadyIncomplete, hours.BasisTimeout
		if complete && s.Producer > 0 {
			s.State = hours.StateReady
		}
		return s
	}
	return nil
}
