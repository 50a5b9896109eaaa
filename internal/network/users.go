package network

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/tributary/tributary/internal/properties"
)

// credentialKind is how a users file stores a password.
type credentialKind int

const (
	credPlain credentialKind = iota
	credMD5
	credBcrypt
)

// credential is one user's stored password.
type credential struct {
	kind credentialKind
	// plain: SHA-256 of the password (so comparing takes the same time
	// whatever its length); MD5: the digest; bcrypt: the hash.
	secret []byte
}

// slow reports whether checking the credential costs real CPU (bcrypt),
// so that checks are bounded and successes cached.
func (c credential) slow() bool { return c.kind == credBcrypt }

// verify reports whether password matches, in time independent of where
// the two differ.
func (c credential) verify(password string) bool {
	switch c.kind {
	case credMD5:
		sum := md5.Sum([]byte(password))
		return subtle.ConstantTimeCompare(sum[:], c.secret) == 1
	case credBcrypt:
		return bcrypt.CompareHashAndPassword(c.secret, []byte(password)) == nil
	}
	sum := sha256.Sum256([]byte(password))
	return subtle.ConstantTimeCompare(sum[:], c.secret) == 1
}

// User is an entry of a users file.
type User struct {
	Name  string
	Roles []string
	cred  credential
}

// Users is the content of a users file in Jetty's HashLoginService format
// (the file Confluent Schema Registry's PropertyFileLoginModule reads): a
// properties file of
//
//	user: password[,role...]
//
// where password is the plain text, MD5:<hex digest of the password>, or a
// bcrypt hash ($2a$, $2b$ or $2y$). Jetty's CRYPT: (DES unix crypt) and
// OBF: (reversible obfuscation) are refused: no maintained Go
// implementation of DES crypt exists, and OBF: protects nothing; re-hash
// such a password with bcrypt (htpasswd -nbB user password).
type Users map[string]*User

// ReadUsersFile reads a users file. Every bad line is reported at once,
// naming the user.
func ReadUsersFile(path string) (Users, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: authentication.users.file: %v", ErrBadAuth, err)
	}
	users, err := ParseUsers(data)
	if err != nil {
		return nil, fmt.Errorf("authentication.users.file %s: %w", path, err)
	}
	return users, nil
}

// ParseUsers parses the content of a users file (see Users).
func ParseUsers(data []byte) (Users, error) {
	m, err := properties.Read(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadAuth, err)
	}
	users := Users{}
	var errs []error
	for name, v := range m {
		items := strings.Split(v, ",")
		password := strings.TrimSpace(items[0])
		cred, err := parseCredential(password)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: user %q: %v", ErrBadAuth, name, err))
			continue
		}
		u := &User{Name: name, cred: cred}
		for _, r := range items[1:] {
			if r = strings.TrimSpace(r); r != "" {
				u.Roles = append(u.Roles, r)
			}
		}
		users[name] = u
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return users, nil
}

func parseCredential(s string) (credential, error) {
	upper := strings.ToUpper(s)
	switch {
	case strings.HasPrefix(upper, "MD5:"):
		sum, err := hex.DecodeString(s[4:])
		if err != nil || len(sum) != md5.Size {
			return credential{}, errors.New("MD5: wants the 32 hex digits of the password's MD5 digest")
		}
		return credential{kind: credMD5, secret: sum}, nil
	case strings.HasPrefix(upper, "CRYPT:"):
		return credential{}, errors.New("CRYPT: (DES unix crypt) passwords are not supported (no maintained Go implementation); use a bcrypt hash ($2y$..., e.g. htpasswd -nbB) or MD5:")
	case strings.HasPrefix(upper, "OBF:"):
		return credential{}, errors.New("OBF: (Jetty's reversible obfuscation) passwords are not supported; use a bcrypt hash ($2y$..., e.g. htpasswd -nbB) or MD5:")
	case strings.HasPrefix(s, "$2a$") || strings.HasPrefix(s, "$2b$") || strings.HasPrefix(s, "$2y$"):
		if _, err := bcrypt.Cost([]byte(s)); err != nil {
			return credential{}, fmt.Errorf("bad bcrypt hash: %v", err)
		}
		return credential{kind: credBcrypt, secret: []byte(s)}, nil
	case s == "":
		return credential{}, errors.New("empty password")
	}
	sum := sha256.Sum256([]byte(s))
	return credential{kind: credPlain, secret: sum[:]}, nil
}
