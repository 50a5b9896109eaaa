package sasl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/plain"
	"golang.org/x/crypto/bcrypt"
)

// testBcryptCost keeps the tests fast; production should use 10 or more.
const testBcryptCost = bcrypt.MinCost

func bcryptLine(t testing.TB, user, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), testBcryptCost)
	if err != nil {
		t.Fatal(err)
	}
	return user + ":" + string(h) + "\n"
}

func writeUsers(t testing.TB, path string, lines ...string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func plainAuthenticator(t testing.TB, path string) *Authenticator {
	t.Helper()
	a, err := New(Config{Mechanisms: []string{Plain}, PlainUsersFile: path}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func plainLogin(t testing.TB, a *Authenticator, user, pass string) error {
	t.Helper()
	_, err := login(t, a, plain.Auth{User: user, Pass: pass}.AsMechanism())
	return err
}

// TestPlainUsersFile: bcrypt and SCRAM entries log in with franz-go's
// PLAIN client; a wrong password and an unknown user get the same error.
func TestPlainUsersFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users")
	c := mustCredential(t, ScramSHA256, "bob-secret", 4096)
	writeUsers(t, path, "# users\n\n", bcryptLine(t, "alice", "alice-secret"), "bob:SCRAM-SHA-256="+c.String()+"\n")
	a := plainAuthenticator(t, path)
	for user, pass := range map[string]string{"alice": "alice-secret", "bob": "bob-secret"} {
		if err := plainLogin(t, a, user, pass); err != nil {
			t.Errorf("%s: %v (%s)", user, err, Reason(err))
		}
	}
	s, _ := a.Start(Plain)
	if _, done, err := s.Step([]byte("\x00alice\x00alice-secret")); err != nil || !done || s.Principal() != "User:alice" {
		t.Errorf("PLAIN alice: done=%v err=%v principal=%q", done, err, s.Principal())
	}
	wrong := plainLogin(t, a, "alice", "nope")
	unknown := plainLogin(t, a, "carol", "alice-secret")
	if !errors.Is(wrong, ErrAuthenticationFailed) || !errors.Is(unknown, ErrAuthenticationFailed) {
		t.Fatalf("wrong password: %v; unknown user: %v; want ErrAuthenticationFailed", wrong, unknown)
	}
	if wrong.Error() != unknown.Error() || Reason(wrong) != Reason(unknown) {
		t.Errorf("wrong password and unknown user differ: %q/%q vs %q/%q", wrong, Reason(wrong), unknown, Reason(unknown))
	}
	for _, msg := range []string{"", "alice", "\x00alice", "\x00alice\x00", "\x00\x00pw", "root\x00alice\x00alice-secret", "\x00alice\x00pw\x00x"} {
		s, _ := a.Start(Plain)
		if _, _, err := s.Step([]byte(msg)); !errors.Is(err, ErrAuthenticationFailed) {
			t.Errorf("PLAIN %q: %v, want ErrAuthenticationFailed", msg, err)
		}
	}
}

// TestPlainUsersFileReload: users added and removed take effect at the
// next login; a broken file is refused and the old users kept.
func TestPlainUsersFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users")
	writeUsers(t, path, bcryptLine(t, "alice", "a"))
	a := plainAuthenticator(t, path)
	if err := plainLogin(t, a, "bob", "b"); err == nil {
		t.Fatal("bob logged in before being added")
	}
	writeUsers(t, path, bcryptLine(t, "alice", "a"), bcryptLine(t, "bob", "b"))
	if err := plainLogin(t, a, "bob", "b"); err != nil {
		t.Fatalf("bob after being added: %v", err)
	}
	// Same size, rewritten in place within the timestamp granularity.
	writeUsers(t, path, bcryptLine(t, "alice", "a"), bcryptLine(t, "bbb", "b"))
	if err := plainLogin(t, a, "bob", "b"); err == nil {
		t.Error("bob logged in after being removed")
	}
	if err := plainLogin(t, a, "bbb", "b"); err != nil {
		t.Errorf("bbb after being added: %v", err)
	}
	writeUsers(t, path, bcryptLine(t, "alice", "a"), "carol:plaintext-password\n")
	if err := plainLogin(t, a, "alice", "a"); err != nil {
		t.Errorf("alice after a broken file: %v (old users must be kept)", err)
	}
	if _, err := OpenUsersFile(path, nil); err == nil || !strings.Contains(err.Error(), "plaintext") {
		t.Errorf("opening a file with a plaintext password: %v", err)
	}
	if _, err := New(Config{Mechanisms: []string{Plain}}, nil, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("PLAIN without a users file: %v", err)
	}
}

// TestPlainManyFailures: 10,000 failed logins in a row (wrong passwords
// and unknown users alternately) stay fast and leave good logins working.
// Each costs one bcrypt comparison at the file's cost (4 here: about a
// millisecond; production's 10 would be about 60 ms of CPU). Under the
// race detector, which makes bcrypt some 15 times slower, 1,000.
func TestPlainManyFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 bcrypt comparisons")
	}
	path := filepath.Join(t.TempDir(), "users")
	writeUsers(t, path, bcryptLine(t, "alice", "a"))
	a := plainAuthenticator(t, path)
	start := time.Now()
	n := 10000
	if raceEnabled {
		n = 1000
	}
	for i := 0; i < n; i++ {
		user := "alice"
		if i%2 == 1 {
			user = fmt.Sprintf("ghost-%d", i)
		}
		s, err := a.Start(Plain)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Step([]byte("\x00" + user + "\x00wrong")); !errors.Is(err, ErrAuthenticationFailed) {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	took := time.Since(start)
	t.Logf("%d failed PLAIN logins in %v (%v each)", n, took, took/time.Duration(n))
	if took > 2*time.Minute {
		t.Errorf("%d failed logins took %v", n, took)
	}
	if err := plainLogin(t, a, "alice", "a"); err != nil {
		t.Errorf("good login after the failures: %v", err)
	}
}
