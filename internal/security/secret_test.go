package security

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExpandSecrets(t *testing.T) {
	dir := t.TempDir()
	whole := filepath.Join(dir, "password")
	props := filepath.Join(dir, "secrets.properties")
	if err := os.WriteFile(whole, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(props, []byte("# secrets\nalice.password = s3cr=t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRIBUTARY_TEST_SECRET", "from-env")
	for in, want := range map[string]string{
		"${env:TRIBUTARY_TEST_SECRET}":                "from-env",
		"${file:" + whole + "}":                       "from-file",
		"${file:" + props + ":alice.password}":        "s3cr=t",
		`password="${env:TRIBUTARY_TEST_SECRET}" x=1`: `password="from-env" x=1`,
		"literal":                       "literal",
		"${vault:secret/data:password}": "${vault:secret/data:password}", // not ours: as written
		"a$b{c}":                        "a$b{c}",
	} {
		if got, err := ExpandSecrets(in); err != nil || got != want {
			t.Errorf("ExpandSecrets(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"${env:TRIBUTARY_TEST_NOT_SET}",
		"${file:" + filepath.Join(dir, "missing") + "}",
		"${file:" + props + ":bob.password}",
	} {
		_, err := ExpandSecrets(in)
		if !errors.Is(err, ErrSecret) || !strings.Contains(err.Error(), in) {
			t.Errorf("ExpandSecrets(%q) = %v, want ErrSecret naming the reference", in, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr=t") {
			t.Errorf("error %v shows a secret", err)
		}
	}
}
