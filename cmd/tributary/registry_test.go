package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// registryChildEnv carries the arguments of a `tributary registry` child
// process, separated by newlines.
const registryChildEnv = "TRIBUTARY_TEST_REGISTRY_CHILD_ARGS"

// TestRegistryChildProcess is the body of the registry child processes the
// tests below start (the test binary re-executed); run directly, it does
// nothing.
func TestRegistryChildProcess(t *testing.T) {
	args := os.Getenv(registryChildEnv)
	if args == "" {
		return
	}
	cmd := newRootCommand()
	cmd.SetArgs(strings.Split(args, "\n"))
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tributary:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

type registryProcess struct {
	url    string
	cmd    *exec.Cmd
	stderr *testproc.SyncBuffer
	done   chan error
	// stopped is set by stop, which the test and its cleanup may both call.
	stopped bool
}

// newRegistryProcess starts `tributary registry args...` as a child process
// and waits until it serves. Cleanup stops it with SIGTERM and checks that
// it exits cleanly.
func newRegistryProcess(t *testing.T, args ...string) *registryProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRegistryChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), registryChildEnv+"="+strings.Join(append([]string{"registry"}, args...), "\n"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &registryProcess{cmd: cmd, stderr: &testproc.SyncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "tributary registry listening on "); ok {
				lines <- url
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case p.url = <-lines:
	case err := <-p.done:
		t.Fatalf("registry exited before serving: %v\n%s", err, p.stderr)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("registry did not serve within 30s\n%s", p.stderr)
	}
	t.Cleanup(func() { p.stop(t) })
	return p
}

func (p *registryProcess) stop(t *testing.T) {
	t.Helper()
	if p.stopped {
		return
	}
	p.stopped = true
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("registry exited with %v after SIGTERM\n%s", err, p.stderr)
		}
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		t.Errorf("registry ignored SIGTERM for 15s\n%s", p.stderr)
	}
}

var registryHTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}

// registryCall sends a JSON request and decodes the JSON answer into out.
func registryCall(p *registryProcess, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, p.url+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := registryHTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}

func TestRegistryInMemoryWarns(t *testing.T) {
	p := newRegistryProcess(t, "--listen", "127.0.0.1:0")
	var id struct{ ID int }
	if err := registryCall(p, "POST", "/subjects/t-value/versions", map[string]string{"schema": `"string"`}, &id); err != nil || id.ID != 1 {
		t.Fatalf("register: %+v, %v", id, err)
	}
	if !strings.Contains(p.stderr.String(), "in memory only") {
		t.Fatalf("no durability warning on stderr:\n%s", p.stderr)
	}
}

func TestRegistryBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"registry", "--compatibility", "SIDEWAYS"},
		{"registry", "--listen", "not an address"},
		{"registry", "--log-level", "loud"},
	} {
		cmd := newRootCommand()
		cmd.SetArgs(args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestRegistryProcessesShareZooKeeper runs two registry processes on one
// real ZooKeeper and has both register the same 1,000 schemas at once:
// each schema must get one id, no two schemas the same id, every subject
// one version per schema, and both processes must serve everything.
func TestRegistryProcessesShareZooKeeper(t *testing.T) {
	b := make([]byte, 6)
	rand.Read(b)
	connect := testenv.ZooKeeper(t) + "/registry-cmd-" + hex.EncodeToString(b)
	procs := []*registryProcess{
		newRegistryProcess(t, "--listen", "127.0.0.1:0", "--zookeeper", connect),
		newRegistryProcess(t, "--listen", "127.0.0.1:0", "--zookeeper", connect),
	}
	var cfg map[string]string
	if err := registryCall(procs[0], "PUT", "/config", map[string]string{"compatibility": "NONE"}, &cfg); err != nil {
		t.Fatal(err)
	}

	const schemas, subjects, workers = 1000, 10, 8
	schemaText := func(i int) string {
		return fmt.Sprintf(`{"type":"record","name":"S%d","namespace":"load","fields":[{"name":"f","type":"long"}]}`, i)
	}
	ids := [2][schemas]int{}
	var wg sync.WaitGroup
	start := time.Now()
	for pi, p := range procs {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := w; n < schemas; n += workers {
					i := n
					if pi == 1 {
						i = schemas - 1 - n // the other end first: races on every schema
					}
					var out struct{ ID int }
					err := registryCall(p, "POST", fmt.Sprintf("/subjects/load-%d/versions", i%subjects), map[string]string{"schema": schemaText(i)}, &out)
					if err != nil {
						t.Errorf("process %d schema %d: %v", pi, i, err)
						return
					}
					ids[pi][i] = out.ID
				}
			}()
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("2 processes registered %d schemas each in %v", schemas, time.Since(start))

	owner := map[int]int{}
	for i := range schemas {
		if ids[0][i] != ids[1][i] || ids[0][i] < 1 {
			t.Fatalf("schema %d: process 0 got id %d, process 1 got id %d", i, ids[0][i], ids[1][i])
		}
		if other, dup := owner[ids[0][i]]; dup {
			t.Fatalf("schemas %d and %d share id %d", other, i, ids[0][i])
		}
		owner[ids[0][i]] = i
	}
	for pi, p := range procs {
		for i := range schemas {
			var out struct{ Schema string }
			if err := registryCall(p, "GET", fmt.Sprintf("/schemas/ids/%d", ids[0][i]), nil, &out); err != nil || out.Schema != schemaText(i) {
				t.Fatalf("process %d, id %d: %q, %v; want schema %d", pi, ids[0][i], out.Schema, err, i)
			}
		}
		// Subject lists come from the watched cache: wait (bounded) for the
		// other process's last writes to arrive.
		deadline := time.Now().Add(20 * time.Second)
		for k := range subjects {
			subject := fmt.Sprintf("load-%d", k)
			for {
				var versions []int
				err := registryCall(p, "GET", "/subjects/"+subject+"/versions", nil, &versions)
				if err == nil && len(versions) == schemas/subjects && versions[0] == 1 && versions[len(versions)-1] == schemas/subjects {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("process %d: %s versions = %v, %v; want 1..%d (one per schema)", pi, subject, versions, err, schemas/subjects)
				}
				time.Sleep(20 * time.Millisecond)
			}
			var latest struct {
				Subject string
				Version int
				ID      int
			}
			if err := registryCall(p, "GET", "/subjects/"+subject+"/versions/latest", nil, &latest); err != nil {
				t.Fatal(err)
			}
			if i := owner[latest.ID]; i%subjects != k || latest.Version != schemas/subjects {
				t.Fatalf("process %d: latest of %s is %+v (schema %d)", pi, subject, latest, i)
			}
		}
		var all []string
		if err := registryCall(p, "GET", "/subjects", nil, &all); err != nil || len(all) != subjects || !slices.IsSorted(all) {
			t.Fatalf("process %d: subjects %v, %v", pi, all, err)
		}
	}
	for _, p := range procs {
		p.stop(t)
	}
}
