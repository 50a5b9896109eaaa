package sasl

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// UsersFile is the PLAIN mechanism's users, read from the file named by
// sasl.plain.users.file and read again when the file changes (checked at
// every login, so a user added or removed takes effect on the next login).
// A changed file that does not parse is refused with a log line and the
// users read before are kept. Safe for concurrent use.
//
// Format (frozen): one user a line, "<user>:<hash>", split at the last
// ':'; blank lines and lines starting with '#' are ignored. <hash> is
//
//   - a bcrypt hash ($2a$, $2b$ or $2y$, as `htpasswd -B` writes), or
//   - a SCRAM credential in Kafka's form, "SCRAM-SHA-256=salt=…,stored_key=…,
//     server_key=…,iterations=…" (or SCRAM-SHA-512=…), as /config/users holds.
//
// A plaintext password is refused. bcrypt cost: 10 (bcrypt's default) or
// more in production, where each login costs the broker tens of
// milliseconds of CPU; tests use bcrypt.MinCost.
type UsersFile struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	stat    os.FileInfo
	content []byte
	loaded  time.Time
	users   map[string]plainEntry
	dummy   plainEntry
}

// plainEntry is one user's hash.
type plainEntry struct {
	bcrypt []byte
	scram  ScramCredential
	mech   ScramMechanism
}

func (e plainEntry) verify(password string) bool {
	if e.bcrypt != nil {
		return bcrypt.CompareHashAndPassword(e.bcrypt, []byte(password)) == nil
	}
	return e.mech.verifyPassword(e.scram, password)
}

// racyWindow: a file modified this recently may change again within the
// file system's timestamp granularity without its stat changing, so it is
// compared by content at every check until it is older.
const racyWindow = 2 * time.Second

// OpenUsersFile reads the users file at path; logger may be nil.
func OpenUsersFile(path string, logger *slog.Logger) (*UsersFile, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &UsersFile{path: path, log: logger}
	if err := f.reload(true); err != nil {
		return nil, err
	}
	return f, nil
}

// Verify reports whether password is user's. It takes as long for an
// unknown user as for a known one (it checks a decoy hash of the costliest
// kind in the file), and compares in constant time.
func (f *UsersFile) Verify(user, password string) bool {
	if err := f.reload(false); err != nil {
		f.log.Error("sasl: keeping the previous PLAIN users", "file", f.path, "err", err)
	}
	f.mu.Lock()
	e, ok := f.users[user]
	if !ok {
		e = f.dummy
	}
	f.mu.Unlock()
	return e.verify(password) && ok
}

// Users returns the number of users, for logs and tests.
func (f *UsersFile) Users() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.users)
}

// reload reads the file again if it may have changed since the last read;
// a file that does not parse leaves the old users in place.
func (f *UsersFile) reload(first bool) error {
	fi, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("%w: sasl.plain.users.file: %w", ErrInvalidConfig, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !first && os.SameFile(fi, f.stat) && fi.ModTime().Equal(f.stat.ModTime()) && fi.Size() == f.stat.Size() &&
		f.loaded.Sub(fi.ModTime()) > racyWindow {
		return nil
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("%w: sasl.plain.users.file: %w", ErrInvalidConfig, err)
	}
	f.stat, f.loaded = fi, time.Now()
	if !first && bytes.Equal(data, f.content) {
		return nil
	}
	f.content = data // a bad file is reported once, not at every login
	users, dummy, err := parseUsers(data)
	if err != nil {
		return fmt.Errorf("%w: sasl.plain.users.file %s: %w", ErrInvalidConfig, f.path, err)
	}
	f.users, f.dummy = users, dummy
	if !first {
		f.log.Info("sasl: PLAIN users reloaded", "file", f.path, "users", len(users))
	}
	return nil
}

// parseUsers reads the users file format; the decoy entry for unknown
// users is a bcrypt hash of the highest cost in the file, or a SCRAM one
// of the most iterations when there is no bcrypt entry.
func parseUsers(data []byte) (map[string]plainEntry, plainEntry, error) {
	users := map[string]plainEntry{}
	var errs []error
	maxCost, maxIter := 0, 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ':')
		if i <= 0 {
			errs = append(errs, fmt.Errorf("line %d: not <user>:<hash>", n))
			continue
		}
		user, hash := line[:i], line[i+1:]
		if _, dup := users[user]; dup {
			errs = append(errs, fmt.Errorf("line %d: user %q listed twice", n, user))
			continue
		}
		e, err := parseEntry(hash)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d (user %q): %w", n, user, err))
			continue
		}
		if e.bcrypt != nil {
			cost, _ := bcrypt.Cost(e.bcrypt)
			maxCost = max(maxCost, cost)
		} else {
			maxIter = max(maxIter, e.scram.Iterations)
		}
		users[user] = e
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, plainEntry{}, errors.Join(errs...)
	}
	var pw [16]byte
	_, _ = rand.Read(pw[:])
	if maxCost > 0 || maxIter == 0 {
		h, err := bcrypt.GenerateFromPassword(pw[:], max(maxCost, bcrypt.MinCost))
		if err != nil {
			return nil, plainEntry{}, err
		}
		return users, plainEntry{bcrypt: h}, nil
	}
	m := ScramMechanisms[1]
	c, err := NewScramCredential(m, string(pw[:]), maxIter)
	if err != nil {
		return nil, plainEntry{}, err
	}
	return users, plainEntry{scram: c, mech: m}, nil
}

func parseEntry(hash string) (plainEntry, error) {
	if strings.HasPrefix(hash, "$2") {
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return plainEntry{}, fmt.Errorf("%w: bcrypt hash: %w", ErrMalformedCredential, err)
		}
		return plainEntry{bcrypt: []byte(hash)}, nil
	}
	name, cred, ok := strings.Cut(hash, "=")
	m, known := ScramMechanismNamed(name)
	if !ok || !known {
		return plainEntry{}, fmt.Errorf("%w: neither a bcrypt hash nor SCRAM-SHA-256=… / SCRAM-SHA-512=… (plaintext passwords are not accepted)", ErrMalformedCredential)
	}
	c, err := ParseScramCredential(cred)
	if err != nil {
		return plainEntry{}, err
	}
	if c.Iterations < MinIterations {
		return plainEntry{}, fmt.Errorf("%w: %d iterations, fewer than %d", ErrUnacceptableCredential, c.Iterations, MinIterations)
	}
	return plainEntry{scram: c, mech: m}, nil
}
