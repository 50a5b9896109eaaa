package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/audit/service"
	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/kafkatest"
)

// auditTotals reads the audit topic to its end and sums counts per
// tier/cluster/topic.
func auditTotals(t *testing.T, bs string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, r := range kafkatest.ReadToEnd(t, []string{bs}, audit.DefaultTopic) {
		e, err := audit.UnmarshalEvent(r.Value)
		if err != nil {
			t.Fatalf("audit record: %v", err)
		}
		out[e.Tier+"/"+e.Cluster+"/"+e.Topic] += e.Count
	}
	return out
}

// TestProduceAndConsumeAudit: `tributary produce` audits by default and
// publishes its counts before it exits, --no-audit turns that off, and
// `tributary consume --audit-tier` counts what it received.
func TestProduceAndConsumeAudit(t *testing.T) {
	bs := brokertest.New(t).Addr()
	createTopic(t, bs, "audited", 2)
	createTopic(t, bs, "quiet", 1)
	var lines strings.Builder
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&lines, "line %d\n", i)
	}
	mustRun(t, lines.String(), "produce", "--bootstrap", bs, "--topic", "audited", "--audit-cluster", "dc1")
	mustRun(t, "a\nb\n", "produce", "--bootstrap", bs, "--topic", "quiet", "--no-audit")
	res := mustRun(t, "", "consume", "--bootstrap", bs, "--topic", "audited", "--offset", "earliest",
		"--max-messages", "30", "--audit-tier", "console", "--audit-cluster", "dc1")
	if n := strings.Count(res.stdout, "\n"); n != 30 {
		t.Fatalf("consumed %d lines", n)
	}
	got := auditTotals(t, bs)
	want := map[string]int64{"producer/dc1/audited": 30, "console/dc1/audited": 30}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("audit totals %v, want %v", got, want)
	}
}

func TestAuditFlagsRejected(t *testing.T) {
	bs := brokertest.New(t).Addr()
	cases := [][]string{
		{"produce", "--bootstrap", bs, "--topic", "x", "--audit-window", "0s"},
		{"produce", "--bootstrap", bs, "--topic", "x", "--audit-interval", "-1s"},
		{"consume", "--bootstrap", bs, "--topic", "x", "--audit-tier", "producer"},
		{"audit", "serve", "--dir", t.TempDir()},
		{"audit", "serve", "--cluster", "nohost", "--dir", t.TempDir()},
		{"audit", "serve", "--cluster", "dc1=127.0.0.1:1"},
		{"audit", "serve", "--cluster", "dc1=127.0.0.1:1", "--dir", t.TempDir(), "--grace", "0"},
		{"audit", "report", "--server", "http://127.0.0.1:1"},
		{"audit", "report", "--server", "ftp://x", "--topic", "t"},
		{"audit", "report", "--server", "http://127.0.0.1:1", "--topic", "t", "--from", "yesterday"},
	}
	for _, args := range cases {
		res := runCLI(t, 30*time.Second, "", args...)
		if !errors.Is(res.err, errBadFlag) {
			t.Errorf("tributary %s: err %v, want a bad-flag error", strings.Join(args, " "), res.err)
		}
	}
}

// TestAuditReportUnknownTopic: `audit report --topic` of a topic the audit
// has no counts of fails naming it and listing the topics it has (it used
// to print an empty table and exit 0); a topic it has reports as before.
func TestAuditReportUnknownTopic(t *testing.T) {
	bs := brokertest.New(t).Addr()
	createTopic(t, bs, "audited", 1)
	mustRun(t, "a\nb\nc\n", "produce", "--bootstrap", bs, "--topic", "audited", "--audit-cluster", "dc1")
	reg := prometheus.NewRegistry()
	svc, err := service.New(service.Config{Clusters: []service.Cluster{{Name: "dc1", Brokers: []string{bs}}}, Dir: t.TempDir(),
		Listen: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler), Registerer: reg, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	server := "http://" + svc.Addr()
	deadline := time.Now().Add(time.Minute)
	for {
		res := runCLI(t, 30*time.Second, "", "audit", "report", "--server", server, "--topic", "audited", "--json")
		if res.err == nil && strings.Contains(res.stdout, `"producer": 3`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit never reported audited: %v %s", res.err, res.stdout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	res := runCLI(t, 30*time.Second, "", "audit", "report", "--server", server, "--topic", "audtied")
	if want := `--topic "audtied": the audit has no counts of this topic (topics it has: audited)`; res.err == nil ||
		!strings.Contains(res.err.Error(), want) || res.stdout != "" {
		t.Errorf("unknown topic: %v (stdout %q), want an error with %q", res.err, res.stdout, want)
	}
}
