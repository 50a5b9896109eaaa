package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitignoreKnowsGeneratedDirs: what dev and pipeline up write by
// default, and the README's `certs --dir certs`, into the working directory
// of a checkout is ignored by git, at the root only (a package of that
// name elsewhere is still source).
func TestGitignoreKnowsGeneratedDirs(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("this test asks git what .gitignore ignores, and git is not on PATH: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var ignored []string
	for _, c := range []struct {
		cmd  []string
		flag string
	}{{[]string{"dev"}, "dir"}, {[]string{"pipeline", "up"}, "dir"}} {
		sub, _, err := newRootCommand().Find(c.cmd)
		if err != nil {
			t.Fatal(err)
		}
		dir := sub.Flags().Lookup(c.flag).DefValue
		ignored = append(ignored, dir+"/broker-1/events-0/00000000000000000000.log")
	}
	ignored = append(ignored, "certs/ca.pem")
	checkIgnore := func(path string) bool {
		// --no-index: whether the path would be ignored, tracked or not.
		cmd := exec.Command(git, "check-ignore", "--no-index", "-q", path)
		cmd.Dir = root
		err := cmd.Run()
		if exit, ok := err.(*exec.ExitError); ok && exit.ExitCode() == 1 {
			return false
		} else if err != nil {
			t.Fatalf("git check-ignore %s: %v", path, err)
		}
		return true
	}
	for _, p := range ignored {
		if !checkIgnore(p) {
			t.Errorf("%s is not ignored", p)
		}
	}
	for _, p := range []string{"internal/certs/certs.go", "docs/certs/x.md", "cmd/tributary/certs.go"} {
		if checkIgnore(p) {
			t.Errorf("%s is ignored: the pattern is not anchored at the root", p)
		}
	}
	if t.Failed() {
		t.Logf("root %s; .gitignore patterns are checked with git check-ignore", strings.TrimSpace(root))
	}
}
