package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

func TestJobsServeRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, yaml, want string }{
		{"invalid schedule", "jobs:\n  - name: rep\n    schedule: \"99 * * * *\"\n    kind: exec\n    args: {command: [\"true\"]}\n", `job "rep": schedule`},
		{"unknown kind", "jobs:\n  - name: rep\n    schedule: \"@hourly\"\n    kind: mapreduce\n", `job "rep": kind: unknown kind "mapreduce"`},
		{"missing argument", "jobs:\n  - name: load\n    schedule: \"@every 5m\"\n    kind: loader\n    args: {}\n", `job "load": args.config: missing`},
		{"missing loader config", "jobs:\n  - name: load\n    schedule: \"@every 5m\"\n    kind: loader\n    args: {config: " + dir + "/loadr.properties}\n",
			`job "load": args.config: ` + dir + `/loadr.properties: no such file or directory`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
			if err := os.WriteFile(p, []byte(c.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, 30*time.Second, "", "jobs", "serve", "--config", p, "--zookeeper", "127.0.0.1:1")
			if r.err == nil || !strings.Contains(r.err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", r.err, c.want)
			}
		})
	}
	if r := runCLI(t, 30*time.Second, "", "jobs", "serve"); r.err == nil || !strings.Contains(r.err.Error(), "--config") {
		t.Errorf("no --config: %v", r.err)
	}
}

func TestJobsCommands(t *testing.T) {
	zk := zktest.Chroot(t, testenv.ZooKeeper(t), "jobs-cli")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobs.yaml")
	yaml := `
jobs:
  - name: hello
    schedule: "0 0 0 1 1 *"
    kind: exec
    args: {command: ["sh", "-c", "echo '{\"greeting\": \"hi\"}'"]}
  - name: fail
    schedule: "0 0 0 1 1 *"
    kind: exec
    args: {command: ["sh", "-c", "echo no disk >&2; exit 2"]}
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	var serveErr testproc.SyncBuffer
	go func() {
		cmd := newRootCommand()
		cmd.SetArgs([]string{"jobs", "serve", "--config", cfg, "--zookeeper", zk, "--id", "sched-1", "--metrics", metricsAddr})
		cmd.SetOut(io.Discard)
		cmd.SetErr(&serveErr)
		served <- cmd.ExecuteContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
		if t.Failed() {
			t.Logf("serve log:\n%s", serveErr.String())
		}
	})

	var listed cliResult
	testenv.WaitFor(t, 60*time.Second, "jobs list to show hello and fail", func() (bool, string) {
		listed = runCLI(t, 30*time.Second, "", "jobs", "list", "--zookeeper", zk)
		return listed.err == nil && strings.Contains(listed.stdout, "hello") && strings.Contains(listed.stdout, "fail"),
			fmt.Sprintf("%+v", listed)
	})
	if !strings.Contains(listed.stdout, "NEXT RUN") || !strings.Contains(listed.stdout, "0 0 0 1 1 *") {
		t.Errorf("list output:\n%s", listed.stdout)
	}

	r := runCLI(t, 90*time.Second, "", "jobs", "run", "hello", "--zookeeper", zk, "--wait", "60s")
	if r.err != nil || !strings.Contains(r.stdout, "hello succeeded on sched-1") || !strings.Contains(r.stdout, `"greeting":"hi"`) {
		t.Errorf("run hello: %+v", r)
	}
	r = runCLI(t, 90*time.Second, "", "jobs", "run", "fail", "--zookeeper", zk, "--wait", "60s")
	if r.err == nil || !strings.Contains(r.err.Error(), "failed") || !strings.Contains(r.err.Error(), "no disk") {
		t.Errorf("run fail: %+v", r)
	}

	r = runCLI(t, 30*time.Second, "", "jobs", "history", "hello", "--zookeeper", zk, "--json")
	var runs []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("history --json: %v %+v", err, r)
	}
	for _, k := range []string{"scheduled_at", "started_at", "ended_at", "status", "scheduler"} {
		if runs[0][k] == nil {
			t.Errorf("history entry lacks %s: %v", k, runs[0])
		}
	}
	if runs[0]["status"] != "succeeded" || runs[0]["scheduler"] != "sched-1" {
		t.Errorf("history entry %v", runs[0])
	}
	r = runCLI(t, 30*time.Second, "", "jobs", "history", "fail", "--zookeeper", zk)
	if r.err != nil || !strings.Contains(r.stdout, "failed") || !strings.Contains(r.stdout, "no disk") {
		t.Errorf("history fail: %+v", r)
	}
	if r = runCLI(t, 30*time.Second, "", "jobs", "history", "nosuch", "--zookeeper", zk); r.err == nil || !strings.Contains(r.err.Error(), "unknown job") {
		t.Errorf("history of an unknown job: %+v", r)
	}

	if r = runCLI(t, 30*time.Second, "", "jobs", "pause", "hello", "--zookeeper", zk); r.err != nil {
		t.Fatal(r.err)
	}
	r = runCLI(t, 30*time.Second, "", "jobs", "list", "--zookeeper", zk, "--json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 2 {
		t.Fatalf("list --json: %v %+v", err, r)
	}
	for _, l := range list {
		if l["name"] == "hello" && (l["paused"] != true || l["next_run"] != nil) {
			t.Errorf("paused job listed as %v", l)
		}
		if l["name"] == "fail" && (l["paused"] != false || l["last_run"].(map[string]any)["status"] != "failed") {
			t.Errorf("fail listed as %v", l)
		}
	}
	if r = runCLI(t, 30*time.Second, "", "jobs", "resume", "hello", "--zookeeper", zk); r.err != nil || !strings.Contains(r.stdout, "hello resumed") {
		t.Fatal(r)
	}

	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`tributary_jobs_last_success_timestamp_seconds{job="hello"}`, `tributary_jobs_failures_total{job="fail"} 1`,
		`tributary_jobs_run_duration_seconds_count{job="hello",status="succeeded"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestJobsServeUnreachableZooKeeper(t *testing.T) {
	p := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(p, []byte("jobs:\n  - name: a\n    schedule: \"@hourly\"\n    kind: exec\n    args: {command: [\"true\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	r := runCLI(t, 60*time.Second, "", "jobs", "serve", "--config", p, "--zookeeper", addr, "--zookeeper-session-timeout", "2s")
	if r.err == nil || !strings.Contains(r.err.Error(), "coordination service") {
		t.Errorf("serve against nothing: %v", r.err)
	}
}
