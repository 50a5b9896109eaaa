package docstest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// PackageTableHeading is the heading of docs/architecture.md whose first
// table lists every package.
const PackageTableHeading = "## Packages"

var backtickedRE = regexp.MustCompile("`([^`]+)`")

// PackageTable returns the packages named in the first column of the first
// table after PackageTableHeading in the Markdown text: every back-quoted
// name of that column (several per row are allowed, "`a`, `b`").
func PackageTable(markdown string) ([]string, error) {
	_, after, ok := strings.Cut(markdown, "\n"+PackageTableHeading+"\n")
	if !ok {
		return nil, fmt.Errorf("%w: no %q heading", ErrPackageTable, PackageTableHeading)
	}
	var pkgs []string
	inTable := false
	for _, line := range strings.Split(after, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			if strings.HasPrefix(line, "#") {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		for _, m := range backtickedRE.FindAllStringSubmatch(cells[1], -1) {
			pkgs = append(pkgs, m[1])
		}
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("%w: no packages in the table under %q", ErrPackageTable, PackageTableHeading)
	}
	return pkgs, nil
}

// ComparePackages returns an ErrPackageTable naming the packages of goList
// (import paths, the module prefix stripped) missing from table and the
// entries of table that are no package.
func ComparePackages(table, goList []string) error {
	var missing, stale []string
	for _, p := range goList {
		if !slices.Contains(table, p) {
			missing = append(missing, p)
		}
	}
	for _, p := range table {
		if !slices.Contains(goList, p) {
			stale = append(stale, p)
		}
	}
	if len(missing) == 0 && len(stale) == 0 {
		return nil
	}
	var b strings.Builder
	if len(missing) > 0 {
		fmt.Fprintf(&b, "\n  not in the table (add a row): %s", strings.Join(missing, ", "))
	}
	if len(stale) > 0 {
		fmt.Fprintf(&b, "\n  in the table but no such package (remove or rename): %s", strings.Join(stale, ", "))
	}
	return fmt.Errorf("%w:%s", ErrPackageTable, b.String())
}
