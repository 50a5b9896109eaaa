package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/testkit/kafkatest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// serveProc is a `tributary audit serve` child process.
type serveProc struct {
	cmd    *exec.Cmd
	out    *logBuffer
	exited chan struct{}
	url    string
}

var listenLine = regexp.MustCompile(`msg="audit service listening" addr=(\S+)`)

func startServe(t *testing.T, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{out: &logBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(testproc.Binary(t), append([]string{"audit", "serve", "--listen", "127.0.0.1:0"}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("audit serve output:\n%s", p.out.String())
		}
	})
	testenv.WaitFor(t, time.Minute, "audit serve listening", func() (bool, string) {
		if m := listenLine.FindStringSubmatch(p.out.String()); m != nil {
			p.url = "http://" + m[1]
			return true, ""
		}
		select {
		case <-p.exited:
			t.Fatalf("audit serve exited:\n%s", p.out.String())
		default:
		}
		return false, p.out.String()
	})
	return p
}

func (p *serveProc) kill() {
	select {
	case <-p.exited:
	default:
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
}

// metric scrapes /metrics for one sample (0 when absent).
func (p *serveProc) metric(t *testing.T, sample string) float64 {
	t.Helper()
	resp, err := http.Get(p.url + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	for _, line := range strings.Split(buf.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return 0
}

func (p *serveProc) windows(t *testing.T) ([]WindowReport, error) {
	resp, err := http.Get(p.url + "/api/topics/clicks/windows")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var reps []WindowReport
	return reps, json.NewDecoder(resp.Body).Decode(&reps)
}

// waitProcClosed waits until the child reports the pipeline's 3 windows
// closed with every producer and reader count.
func waitProcClosed(t *testing.T, s *serveProc, p *pipeline) []WindowReport {
	t.Helper()
	var reps []WindowReport
	testenv.WaitFor(t, 2*time.Minute, "3 closed windows with every count", func() (bool, string) {
		var err error
		if reps, err = s.windows(t); err != nil || len(reps) != 3 {
			return false, fmt.Sprint(len(reps), err)
		}
		for _, r := range reps {
			if !r.Closed || r.Producer != p.want[r.WindowStart] || r.Counts["reader"] != p.want[r.WindowStart] {
				return false, fmt.Sprintf("%s closed=%v counts=%v want %d", r.WindowStart, r.Closed, r.Counts, p.want[r.WindowStart])
			}
		}
		return true, ""
	})
	return reps
}

// TestKillNineRestartAndDuplicates: `tributary audit serve` is killed with
// SIGKILL while producers stream audit events and restarted on the same
// directory: the totals come out exact. Then every event of dc1's audit
// topic is fed again (into dc1 and into dc2, as a mirror would): nothing
// changes and the duplicates are counted. `tributary audit report` prints
// the 17 missing records and exits non-zero.
func TestKillNineRestartAndDuplicates(t *testing.T) {
	p := runPipeline(t, 100_000)
	dir := t.TempDir()
	args := []string{"--cluster", "dc1=" + p.dc1, "--cluster", "dc2=" + p.dc2, "--dir", dir, "--grace", "2"}
	srv := startServe(t, args...)

	produced := make(chan struct{})
	go func() { defer close(produced); p.produce(t) }()
	testenv.WaitFor(t, 2*time.Minute, "the service consuming events mid-stream", func() (bool, string) {
		n := srv.metric(t, `audit_service_events_consumed_total{cluster="dc1"}`)
		return n > 0, fmt.Sprint(n)
	})
	select {
	case <-produced:
		t.Log("note: producers finished before the kill; the kill is after some events, not mid-production")
	default:
	}
	srv.kill()
	srv = startServe(t, args...)
	<-produced
	p.consume(t)
	reps := waitProcClosed(t, srv, p)
	checkReports(t, reps, p)

	// Feed every event of dc1's audit topic again, to dc1 and to dc2.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var values [][]byte
	for _, r := range kafkatest.ReadToEnd(t, []string{p.dc1}, audit.DefaultTopic) {
		values = append(values, r.Value)
	}
	if len(values) == 0 {
		t.Fatal("dc1's audit topic is empty")
	}
	dupBefore := srv.metric(t, `audit_service_duplicate_events_total{cluster="dc1"}`) + srv.metric(t, `audit_service_duplicate_events_total{cluster="dc2"}`)
	var wg sync.WaitGroup
	for _, addr := range []string{p.dc1, p.dc2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := newKgo(t, kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(audit.DefaultTopic))
			for _, v := range values {
				cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("re-feed: %v", err)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	testenv.WaitFor(t, 2*time.Minute, "every re-fed event dropped as a duplicate", func() (bool, string) {
		d := srv.metric(t, `audit_service_duplicate_events_total{cluster="dc1"}`) + srv.metric(t, `audit_service_duplicate_events_total{cluster="dc2"}`)
		return d-dupBefore == float64(2*len(values)), fmt.Sprintf("%v of %d", d-dupBefore, 2*len(values))
	})
	reps, err := srv.windows(t)
	if err != nil {
		t.Fatal(err)
	}
	checkReports(t, reps, p)

	// The report CLI: JSON for machines, exit status 1 for the incomplete window.
	out, err := exec.Command(testproc.Binary(t), "audit", "report", "--server", srv.url, "--topic", "clicks", "--json").Output()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Fatalf("report --json: err %v (want exit status 1)\n%s", err, out)
	}
	var arr []struct {
		Topic       string           `json:"topic"`
		WindowStart time.Time        `json:"window_start"`
		WindowEnd   time.Time        `json:"window_end"`
		Closed      bool             `json:"closed"`
		Counts      map[string]int64 `json:"counts"`
	}
	if err := json.Unmarshal(out, &arr); err != nil || len(arr) != 3 {
		t.Fatalf("report --json: %v\n%s", err, out)
	}
	for i, w := range arr {
		start := p.t0.Add(time.Duration(i) * testWindow)
		wantLossy := p.want[start]
		if i == 1 {
			wantLossy -= 17
		}
		if w.Topic != "clicks" || !w.WindowStart.Equal(start) || !w.WindowEnd.Equal(start.Add(testWindow)) || !w.Closed ||
			w.Counts["producer"] != p.want[start] || w.Counts["reader"] != p.want[start] || w.Counts["lossy"] != wantLossy {
			t.Errorf("report window %d: %+v", i, w)
		}
	}
	if !bytes.Contains(out, []byte(`"window_start": "`+p.t0.Add(testWindow).Format(time.RFC3339)+`"`)) {
		t.Errorf("window_start not in RFC 3339 in:\n%s", out)
	}
	table, err := exec.Command(testproc.Binary(t), "audit", "report", "--server", srv.url, "--topic", "clicks").CombinedOutput()
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Fatalf("report: err %v (want exit status 1)\n%s", err, table)
	}
	midLine := ""
	for _, line := range strings.Split(string(table), "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, p.t0.Add(testWindow).Format(time.RFC3339)) {
			midLine = strings.Join(strings.Fields(line), " ")
		}
	}
	wantLine := fmt.Sprintf("%s %d %d 99.", p.t0.Add(testWindow).Format(time.RFC3339), p.want[p.t0.Add(testWindow)], p.want[p.t0.Add(testWindow)]-17)
	if !strings.HasPrefix(midLine, wantLine) || !strings.HasSuffix(midLine, " 100.000% 17 0 incomplete") {
		t.Errorf("table line %q, want %q... 100.000%% 17 0 incomplete; table:\n%s", midLine, wantLine, table)
	}
	if !strings.Contains(string(table), "1 closed window(s) of clicks miss records") {
		t.Errorf("no error line in:\n%s", table)
	}
	// A time range without the incomplete window exits 0.
	from := p.t0.Add(2 * testWindow).Format(time.RFC3339)
	if out, err := exec.Command(testproc.Binary(t), "audit", "report", "--server", srv.url, "--topic", "clicks", "--from", from).CombinedOutput(); err != nil {
		t.Errorf("report --from %s: %v\n%s", from, err, out)
	}
}
