package network

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// Permission is what a request needs, in increasing order: each level
// includes the ones below it (a writer may read, an admin may write).
type Permission int

// The permission levels. Services say what each request needs: the
// registry's GETs and lookups need Read, registering Write, config, mode
// and deletes Admin; the audit service and /metrics need Read, pprof Admin.
const (
	// Anonymous requests need no credentials (health checks).
	Anonymous Permission = iota
	Read
	Write
	Admin
)

// ParsePermission reads read, write or admin (any case).
func ParsePermission(s string) (Permission, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "read":
		return Read, nil
	case "write":
		return Write, nil
	case "admin":
		return Admin, nil
	}
	return 0, fmt.Errorf("%q: want read, write or admin", s)
}

func (p Permission) String() string {
	return [...]string{"anonymous", "read", "write", "admin"}[p]
}

// NeedFunc says what permission a request needs.
type NeedFunc func(*http.Request) Permission

// DefaultRealm is authentication.realm when not set.
const DefaultRealm = "Tributary"

// BasicAuth authenticates requests with HTTP basic authentication against
// a users file and authorizes them by role. It is safe for concurrent use.
//
// Password checks are constant-time. bcrypt checks, the only costly ones,
// run at most MaxChecks at a time (a brute force then holds that many
// cores, not all), and a successful one is remembered as an HMAC of the
// password under a key of the process, so a user's next requests are
// checked in microseconds; a failed check is never cached.
type BasicAuth struct {
	realm  string
	users  Users
	allow  []string              // roles that may log in; nil = any
	grants map[string]Permission // role → level; nil = every allowed role is Admin
	sem    chan struct{}
	// dummy is checked for an unknown user, so that a name's existence
	// does not show in the time a bcrypt file takes to answer.
	dummy    *credential
	cacheKey []byte
	mu       sync.Mutex
	verified map[string][]byte // user → HMAC of the last good password
}

// AuthConfig configures basic authentication (Confluent's authentication.*
// keys, plus authorization.roles.<role>).
type AuthConfig struct {
	// Method is authentication.method: "" or NONE (anonymous) or BASIC.
	Method string
	// Realm is authentication.realm, sent in WWW-Authenticate; default
	// DefaultRealm. (Confluent names a JAAS section here whose file= is
	// the users file; give UsersFile instead.)
	Realm string
	// Roles is authentication.roles: the roles allowed in at all; empty
	// or "*" allows any authenticated user.
	Roles []string
	// UsersFile is authentication.users.file (see Users).
	UsersFile string
	// Grants is authorization.roles.<role>=read|write|admin. Empty: every
	// allowed user may do everything (Confluent's behaviour with BASIC
	// alone). Otherwise a user gets the highest level of its roles, and a
	// role without a grant gets none.
	Grants map[string]Permission
	// MaxChecks bounds concurrent bcrypt checks; 0 is half the CPUs (at
	// least one).
	MaxChecks int
}

// Enabled reports whether c asks for authentication.
func (c AuthConfig) Enabled() bool { return c.Method != "" && !strings.EqualFold(c.Method, "NONE") }

// NewBasicAuth reads the users file of c; nil without error when c
// enables no authentication.
func NewBasicAuth(c AuthConfig) (*BasicAuth, error) {
	if !c.Enabled() {
		return nil, nil
	}
	if !strings.EqualFold(c.Method, "BASIC") {
		return nil, fmt.Errorf("%w: authentication.method %q: want BASIC or NONE", ErrBadAuth, c.Method)
	}
	if c.UsersFile == "" {
		return nil, fmt.Errorf("%w: authentication.method=BASIC needs authentication.users.file", ErrBadAuth)
	}
	users, err := ReadUsersFile(c.UsersFile)
	if err != nil {
		return nil, err
	}
	return newBasicAuth(c, users)
}

func newBasicAuth(c AuthConfig, users Users) (*BasicAuth, error) {
	checks := c.MaxChecks
	if checks <= 0 {
		checks = max(1, runtime.GOMAXPROCS(0)/2)
	}
	a := &BasicAuth{realm: c.Realm, users: users, sem: make(chan struct{}, checks), verified: map[string][]byte{}}
	if a.realm == "" {
		a.realm = DefaultRealm
	}
	if strings.ContainsAny(a.realm, "\"\\\r\n") {
		return nil, fmt.Errorf("%w: authentication.realm %q: no quotes, backslashes or line breaks", ErrBadAuth, a.realm)
	}
	if !slices.Contains(c.Roles, "*") {
		a.allow = c.Roles
	}
	if len(c.Grants) > 0 {
		a.grants = c.Grants
	}
	for _, u := range users {
		if u.cred.slow() {
			d, _ := bcrypt.GenerateFromPassword([]byte("not a password"), mustCost(u.cred.secret))
			a.dummy = &credential{kind: credBcrypt, secret: d}
			break
		}
	}
	a.cacheKey = make([]byte, 32)
	rand.Read(a.cacheKey)
	return a, nil
}

func mustCost(hash []byte) int {
	c, err := bcrypt.Cost(hash)
	if err != nil {
		return bcrypt.DefaultCost
	}
	return c
}

// Realm is the realm sent in WWW-Authenticate.
func (a *BasicAuth) Realm() string { return a.realm }

// Authenticate returns the user whose credentials r carries; nil when it
// carries none or wrong ones (or ctx ends waiting for a check).
func (a *BasicAuth) Authenticate(r *http.Request) *User {
	name, password, ok := r.BasicAuth()
	if !ok {
		return nil
	}
	u := a.users[name]
	if u == nil {
		if a.dummy != nil {
			a.check(r.Context(), "", *a.dummy, password)
		}
		return nil
	}
	if !a.check(r.Context(), name, u.cred, password) {
		return nil
	}
	return u
}

func (a *BasicAuth) check(ctx context.Context, name string, c credential, password string) bool {
	if !c.slow() {
		return c.verify(password)
	}
	mac := hmac.New(sha256.New, a.cacheKey)
	mac.Write([]byte(password))
	sum := mac.Sum(nil)
	a.mu.Lock()
	cached := a.verified[name]
	a.mu.Unlock()
	if cached != nil && hmac.Equal(cached, sum) {
		return true
	}
	select {
	case a.sem <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	ok := c.verify(password)
	<-a.sem
	if ok && name != "" {
		a.mu.Lock()
		a.verified[name] = sum
		a.mu.Unlock()
	}
	return ok
}

// Level is the highest permission u's roles grant (Anonymous: none, or no
// allowed role).
func (a *BasicAuth) Level(u *User) Permission {
	allowed := a.allow == nil
	for _, r := range u.Roles {
		if slices.Contains(a.allow, r) {
			allowed = true
		}
	}
	if !allowed {
		return Anonymous
	}
	if a.grants == nil {
		return Admin
	}
	level := Anonymous
	for _, r := range u.Roles {
		level = max(level, a.grants[r])
	}
	return level
}

// Wrap returns h behind a: a request that need says is not Anonymous is
// answered 401 with WWW-Authenticate without valid credentials and 403
// when its user's roles do not grant the permission, both with Confluent's
// error body ({"error_code":40101,"message":...}, 40301). need nil means
// every request needs Read.
func (a *BasicAuth) Wrap(h http.Handler, need NeedFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := Read
		if need != nil {
			p = need(r)
		}
		if p == Anonymous {
			h.ServeHTTP(w, r)
			return
		}
		u := a.Authenticate(r)
		if u == nil {
			w.Header().Set("WWW-Authenticate", `Basic realm="`+a.realm+`", charset="UTF-8"`)
			WriteAuthError(w, http.StatusUnauthorized, 40101, "Unauthorized")
			return
		}
		if a.Level(u) < p {
			WriteAuthError(w, http.StatusForbidden, 40301, fmt.Sprintf("User %s cannot access the resource: it needs %s permission", u.Name, p))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// WriteAuthError writes Confluent's error body with status.
func WriteAuthError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}{code, msg})
}
