package hours

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/tributary/tributary"

// TestContractBelowItsUsers checks that the contract stays under its users
// (STYLE.md 18): reading the loaded hours, their readiness or the catalog
// must not pull in compaction or a Parquet library. A package listed here
// that starts importing jobs/compact (or a Parquet module) fails it: move
// what it needs into package hours instead.
func TestContractBelowItsUsers(t *testing.T) {
	rules := []struct {
		pkg     string
		parquet bool // whether a Parquet module may be a dependency
	}{
		{"hours", false},
		{"audit/service", false},
		{"jobs/tables", false},
		{"jobs/retention", false},
		{"loader", false},
		{"hours/rows", true}, // reads the compacted Parquet files, but does not compact
	}
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			reported := map[string]bool{} // Parquet modules, one error each
			for _, d := range deps(t, module+"/"+r.pkg) {
				if d.ImportPath == module+"/jobs/compact" || strings.HasPrefix(d.ImportPath, module+"/jobs/compact/") {
					t.Errorf("%s depends on %s: the types it needs belong in package hours", r.pkg, d.ImportPath)
				}
				if (r.pkg == "hours" || strings.HasPrefix(r.pkg, "hours/")) && strings.HasPrefix(d.ImportPath, module+"/jobs") {
					t.Errorf("%s depends on %s: the contract must sit below the jobs", r.pkg, d.ImportPath)
				}
				if !r.parquet && d.Module != nil && strings.Contains(strings.ToLower(d.Module.Path), "parquet") && !reported[d.Module.Path] {
					reported[d.Module.Path] = true
					t.Errorf("%s depends on %s (module %s): it must not pull in a Parquet library", r.pkg, d.ImportPath, d.Module.Path)
				}
			}
		})
	}
}

// dep is the part of `go list -json` output the rules read.
type dep struct {
	ImportPath string
	Module     *struct{ Path string }
}

// deps returns pkg and its transitive non-test dependencies, as
// `go list -deps -json` gives them.
func deps(t *testing.T, pkg string) []dep {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the import rules need the go command on PATH: %v", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(gobin, "list", "-deps", "-json=ImportPath,Module", pkg)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.String())
	}
	var all []dep
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var d dep
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		all = append(all, d)
	}
	if len(all) == 0 || all[len(all)-1].ImportPath != pkg {
		t.Fatalf("go list -deps %s: %d packages, not ending with %s", pkg, len(all), pkg)
	}
	return all
}
