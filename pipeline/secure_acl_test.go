package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// TestSecureMirrorDenied: the secured pipeline loses the mirror's Write on
// its target mid-run. The mirror must say so (a TOPIC_AUTHORIZATION_FAILED
// in its log, tributary_mirror_stopped_partitions > 0), the audit must show
// the gap (a closed window where the mirror counted less than the
// producers) and nothing is lost: once the ACL is back the mirror retries
// by itself, without a restart (stopped.partition.retry.ms; it resumes
// from its last commit), every window completes and the loaded files hold
// every record exactly once.
func TestSecureMirrorDenied(t *testing.T) {
	t.Parallel()
	logs := &testproc.SyncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := Start(ctx, Config{
		Dir: t.TempDir(), Rate: 50, AuditWindow: 5 * time.Second, AuditInterval: time.Second,
		LoadInterval: 2 * time.Second, Secure: true, Logger: testLogger(t, logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var out testproc.SyncBuffer
	res, err := p.RunFor(ctx, DemoOptions{Duration: 90 * time.Second, Drain: DefaultDemoDrain, During: func(ctx context.Context, p *Pipeline) error {
		return denyMirrorWrite(ctx, p, logs)
	}}, &out)
	if res != nil {
		res.Print(&out, p)
	}
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	if res.Loaded != res.Produced || res.Mirrored < res.Produced {
		t.Errorf("produced %d, mirrored %d, loaded %d", res.Produced, res.Mirrored, res.Loaded)
	}
	if res.Windows < 2 || res.Complete != res.Windows {
		t.Errorf("audit: %d of %d windows complete after the ACL came back", res.Complete, res.Windows)
	}
}

// denyMirrorWrite removes the mirror's Write on analytics' page-view
// topic, waits for the mirror's error and metric and for the audit's gap,
// then grants it again and waits for the mirror to resume by itself.
func denyMirrorWrite(ctx context.Context, p *Pipeline, logs *testproc.SyncBuffer) error {
	analytics := p.Cluster(AnalyticsCluster)
	write := mirrorTargetWrite(p.cfg.Topic)
	err := await(ctx, time.Minute, "the mirror's first counts", func() bool {
		ws, _ := p.AuditReport(ctx)
		for _, w := range ws {
			if w.Mirror > 0 {
				return true
			}
		}
		return false
	})
	if err != nil {
		return err
	}
	var deleted []acl.Binding
	f := acl.Filter{Type: acl.ResourceTopic, Name: &write.Pattern.Name, Pattern: acl.PatternLiteral,
		Principal: &write.Entry.Principal, Operation: acl.OpWrite, Permission: acl.Allow}
	deleted, err = analytics.DeleteACLs(ctx, f)
	if err != nil || len(deleted) != 1 {
		return fmt.Errorf("deleting %v: %v (deleted %v)", write, err, deleted)
	}
	err = await(ctx, time.Minute, "the mirror's log and metric of the refusal", func() bool {
		return mirrorRefusalLogged(logs.String()) && mirrorStopped(p) > 0
	})
	if err != nil {
		return err
	}
	err = await(ctx, time.Minute, "a closed audit window with mirror < producer", func() bool {
		ws, err := p.AuditReport(ctx)
		if err != nil {
			return false
		}
		for _, w := range ws {
			// The report's INCOMPLETE.
			if w.Closed && w.Mirror < w.Producer && !w.Complete() {
				return true
			}
		}
		return false
	})
	if err != nil {
		return err
	}
	if err := analytics.CreateACLs(ctx, write); err != nil {
		return err
	}
	// No restart: the mirror retries the stopped partitions by itself
	// (stopped.partition.retry.ms), from the offsets it committed.
	return await(ctx, 2*time.Minute, "the mirror's retry of its stopped partitions, and none stopped after it", func() bool {
		return strings.Contains(logs.String(), "to retry stopped partitions") && mirrorStopped(p) == 0
	})
}

// mirrorRefusalLogged: the mirror logged a partition it stopped on the
// target's authorization error.
func mirrorRefusalLogged(log string) bool {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "part=mirror") && strings.Contains(line, "partition stopped") &&
			strings.Contains(line, "TOPIC_AUTHORIZATION_FAILED") {
			return true
		}
	}
	return false
}

// mirrorStopped is the mirror's tributary_mirror_stopped_partitions.
func mirrorStopped(p *Pipeline) float64 {
	g := p.MirrorMetrics()
	if g == nil {
		return 0
	}
	mfs, err := g.Gather()
	if err != nil {
		return 0
	}
	for _, mf := range mfs {
		if mf.GetName() == "tributary_mirror_stopped_partitions" {
			for _, m := range mf.GetMetric() {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// await polls cond until it holds, for at most d.
func await(ctx context.Context, d time.Duration, what string, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}
