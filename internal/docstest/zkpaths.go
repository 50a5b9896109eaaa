package docstest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// PathConstants returns the string constants of the Go file at path whose
// values are absolute ZooKeeper paths ("/brokers/ids", ...; "/" alone is not
// one).
func PathConstants(path string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				s, err := strconv.Unquote(lit.Value)
				if err == nil && strings.HasPrefix(s, "/") && len(s) > 1 {
					paths = append(paths, s)
				}
			}
		}
	}
	return paths, nil
}
