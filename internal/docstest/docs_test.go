package docstest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

func TestMain(m *testing.M) { os.Exit(testproc.Main(m)) }

func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files, err := DocFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestMarkdownBlocks checks every document's markers and properties blocks.
func TestMarkdownBlocks(t *testing.T) {
	root := testenv.RepoRoot(t)
	for _, f := range docFiles(t, root) {
		blocks, err := Extract(filepath.Join(root, f))
		if err != nil {
			t.Error(err)
			continue
		}
		if err := CheckProperties(blocks); err != nil {
			t.Error(err)
		}
	}
}

// TestPackageTable checks docs/architecture.md's package table against `go
// list ./...`.
func TestPackageTable(t *testing.T) {
	root := testenv.RepoRoot(t)
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(p, "github.com/tributary/tributary/"); ok {
			pkgs = append(pkgs, rel)
		}
	}
	md, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	table, err := PackageTable(string(md))
	if err != nil {
		t.Fatal(err)
	}
	if err := ComparePackages(table, pkgs); err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
}

// TestExamples runs every run block of the documents, file by file, each file
// against a dev cluster of its own.
func TestExamples(t *testing.T) {
	root := testenv.RepoRoot(t)
	ran := 0
	for _, f := range docFiles(t, root) {
		blocks, err := Extract(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err) // TestMarkdownBlocks says more
		}
		var run []Block
		for _, b := range blocks {
			if b.Run {
				run = append(run, b)
			}
		}
		if len(run) == 0 {
			continue
		}
		ran += len(run)
		t.Run(strings.ReplaceAll(f, "/", "_"), func(t *testing.T) { runFile(t, run) })
	}
	if ran == 0 {
		t.Fatal("no run blocks found in the documents")
	}
}

// TestBrokenExampleFails proves that an example using a flag the CLI does not
// have fails the test, with the binary the examples run.
func TestBrokenExampleFails(t *testing.T) {
	blocks, err := Parse("broken.md", []byte("<!-- docs-test: run -->\n```sh\nbin/tributary topics list --bootstrap 127.0.0.1:9092 --no-such-flag\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, false)
	_, err = s.Run(context.Background(), blocks[0])
	if !errors.Is(err, ErrBlockFailed) || !strings.Contains(err.Error(), "unknown flag: --no-such-flag") {
		t.Fatalf("err %v, want ErrBlockFailed naming the unknown flag", err)
	}
}

func portOffset(t *testing.T) int {
	v := os.Getenv("TRIBUTARY_TEST_PORT_OFFSET")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("TRIBUTARY_TEST_PORT_OFFSET=%q: %v", v, err)
	}
	return n
}

// newSession makes a working directory with bin/tributary built from this
// checkout; with zk, the documented ZooKeeper is the test's under a chroot of
// this session.
func newSession(t *testing.T, zk bool) *Session {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(testproc.Binary(t), filepath.Join(dir, "bin", "tributary")); err != nil {
		t.Fatal(err)
	}
	s := &Session{Dir: dir, Rewrite: Rewrite{PortOffset: portOffset(t)}}
	if zk {
		s.Rewrite.ZooKeeper = zktest.Chroot(t, testenv.ZooKeeper(t), "docstest")
	}
	t.Cleanup(func() { s.Close(10 * time.Second) })
	return s
}

func runFile(t *testing.T, blocks []Block) {
	needZK := false
	for _, b := range blocks {
		needZK = needZK || zkAddrRE.MatchString(b.Text)
	}
	s := newSession(t, needZK)
	startCluster(t, s)
	ctx := context.Background()
	for _, b := range blocks {
		start := time.Now()
		out, err := s.Run(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s ran in %v:\n%s", b, time.Since(start).Round(time.Millisecond), out)
	}
}

// startCluster starts the dev cluster the documents are written against, in
// the session's directory, and waits until its brokers and registry answer.
func startCluster(t *testing.T, s *Session) {
	t.Helper()
	off := s.Rewrite.PortOffset
	registry := net.JoinHostPort("127.0.0.1", strconv.Itoa(DocRegistryPort+off))
	cmd := exec.Command(filepath.Join(s.Dir, "bin", "tributary"), "dev",
		"--brokers", strconv.Itoa(DocBrokers), "--port", strconv.Itoa(DocBrokerPort+off),
		"--registry", registry, "--dir", filepath.Join(t.TempDir(), "cluster"), "--log-level", "warn")
	cmd.Dir = s.Dir
	log := &testproc.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	for p := DocBrokerPort + off; p < DocBrokerPort+off+DocBrokers; p++ {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), time.Second); err == nil {
			c.Close()
			t.Fatalf("port %d is already in use: the examples' dev cluster needs 127.0.0.1:%d-%d and %s (stop what listens there, or set TRIBUTARY_TEST_PORT_OFFSET)",
				p, DocBrokerPort+off, DocBrokerPort+off+DocBrokers-1, registry)
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.groups = append(s.groups, cmd.Process.Pid)
	// Reaped as soon as it exits, so that Close does not wait on a zombie.
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dev cluster output:\n%s", log.String())
		}
	})
	testenv.WaitFor(t, 60*time.Second, "the dev cluster's brokers and registry", func() (bool, string) {
		select {
		case <-exited:
			return false, "exited: " + log.String()
		default:
		}
		for p := DocBrokerPort + off; p < DocBrokerPort+off+DocBrokers; p++ {
			c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), time.Second)
			if err != nil {
				return false, err.Error()
			}
			c.Close()
		}
		resp, err := http.Get("http://" + registry + "/subjects")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}

// zkPathSources are the files whose ZooKeeper path constants the node table
// of docs/architecture.md must show.
var zkPathSources = []string{
	"broker/cluster/layout.go", "broker/cluster/shutdown.go", "broker/cluster/zkreassign.go",
	"broker/acl/store.go", "broker/sasl/store.go", "broker/entityconfig/entityconfig.go",
	"broker/producerids.go", "jobs/store.go", "schema/registry/coordstore.go",
}

// TestZooKeeperTable checks that every ZooKeeper path constant of the code
// (zkPathSources) appears in docs/architecture.md's node table.
func TestZooKeeperTable(t *testing.T) {
	root := testenv.RepoRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(md), "The nodes actually used")
	if !ok {
		t.Fatal(`docs/architecture.md: no "The nodes actually used" ZooKeeper table`)
	}
	table, _, _ = strings.Cut(table, "\n```\n\n")
	for _, src := range zkPathSources {
		paths, err := PathConstants(filepath.Join(root, src))
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) == 0 {
			t.Errorf("%s: no ZooKeeper path constants found (moved? update zkPathSources)", src)
		}
		for _, p := range paths {
			if !strings.Contains(table, p) {
				t.Errorf("docs/architecture.md's ZooKeeper table misses %s (a constant of %s)", p, src)
			}
		}
	}
}

// TestLayoutUpToDate checks that docs/layout.md is what
// scripts/package-layout.sh prints for the code as it is.
func TestLayoutUpToDate(t *testing.T) {
	root := testenv.RepoRoot(t)
	cmd := exec.Command("bash", "scripts/package-layout.sh")
	cmd.Dir = root
	want, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/package-layout.sh: %v", err)
	}
	have, err := os.ReadFile(filepath.Join(root, "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(have) != string(want) {
		t.Fatal("docs/layout.md is stale (the packages or their imports changed); run `make docs` and commit the result")
	}
}
