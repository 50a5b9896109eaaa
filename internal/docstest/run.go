package docstest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// BlockTimeout bounds one run block.
const BlockTimeout = 3 * time.Minute

// Documented addresses: what the examples are written against.
const (
	DocBrokerPort   = 9092 // first of DocBrokers consecutive ports
	DocBrokers      = 3
	DocRegistryPort = 8081
	DocZooKeeper    = "127.0.0.1:2181"
)

// Rewrite maps the documented addresses to the ones a test started.
type Rewrite struct {
	PortOffset int    // added to the broker and registry ports
	ZooKeeper  string // HOST:PORT[/chroot] the documented ZooKeeper becomes; "" if none
}

var (
	kafkaAddrRE = regexp.MustCompile(`\b(127\.0\.0\.1|localhost):(909[2-4]|808[1-9]|8090)\b`)
	zkAddrRE    = regexp.MustCompile(`\b127\.0\.0\.1:2181\b`)
)

// Apply returns text with the documented addresses rewritten, or an error if
// text needs a ZooKeeper and the rewrite has none.
func (r Rewrite) Apply(text string) (string, error) {
	text = kafkaAddrRE.ReplaceAllStringFunc(text, func(s string) string {
		host, port, _ := strings.Cut(s, ":")
		p, _ := strconv.Atoi(port)
		return host + ":" + strconv.Itoa(p+r.PortOffset)
	})
	if zkAddrRE.MatchString(text) {
		if r.ZooKeeper == "" {
			return "", errors.New("the block uses ZooKeeper at " + DocZooKeeper + " and no test ZooKeeper is set (TRIBUTARY_TEST_ZK: run under scripts/with-servers.sh)")
		}
		text = zkAddrRE.ReplaceAllLiteralString(text, r.ZooKeeper)
	}
	return text, nil
}

// Session runs the blocks of one file in one working directory and ends the
// processes they leave behind.
type Session struct {
	Dir     string   // working directory of every block
	Env     []string // environment of every block (nil: bash's default of the test's)
	Rewrite Rewrite
	groups  []int // process groups started, killed by Close
}

// Run runs one block with bash -e -u -o pipefail and returns its combined
// output. A non-zero exit or a timeout is an ErrBlockFailed naming the block.
func (s *Session) Run(ctx context.Context, b Block) (string, error) {
	text, err := s.Rewrite.Apply(b.Text)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrBlockFailed, b, err)
	}
	ctx, cancel := context.WithTimeout(ctx, BlockTimeout)
	defer cancel()
	cmd := exec.Command("bash", "-e", "-u", "-o", "pipefail", "-c", text)
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	// A file, not a pipe: a process the block leaves in the background
	// keeps its output open, and Wait would wait for it.
	out, err := os.CreateTemp("", "docstest-out")
	if err != nil {
		return "", err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd.Stdout = out
	cmd.Stderr = out
	// Its own process group, so that what the block starts in the
	// background is found and ended by Close, and a timeout ends it all.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrBlockFailed, b, err)
	}
	s.groups = append(s.groups, cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		err = fmt.Errorf("still running after %v (a command that does not end? give it --timeout-ms or --max-messages)", BlockTimeout)
	}
	output, rerr := os.ReadFile(out.Name())
	if rerr != nil {
		return "", rerr
	}
	if err != nil {
		return string(output), fmt.Errorf("%w: %s: %v\n--- block (as run)\n%s--- output\n%s", ErrBlockFailed, b, err, text, output)
	}
	return string(output), nil
}

// Close ends every process the blocks left running: SIGTERM, then SIGKILL
// after grace.
func (s *Session) Close(grace time.Duration) {
	for _, g := range s.groups {
		_ = syscall.Kill(-g, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for _, g := range s.groups {
		for syscall.Kill(-g, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
	s.groups = nil
}
