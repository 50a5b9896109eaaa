package sasl

import (
	"bytes"
	"errors"
	"time"
)

// PlainMessage is a parsed PLAIN message (RFC 4616):
// [authzid] NUL authcid NUL passwd.
type PlainMessage struct {
	AuthzID  string
	User     string
	Password string
}

// ParsePlain parses a PLAIN message: exactly two NULs, a non-empty user and
// password, and an authzid that is empty or the user (Kafka's rule: one
// cannot log in as somebody else).
func ParsePlain(msg []byte) (PlainMessage, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return PlainMessage{}, errors.New("PLAIN message is not authzid NUL authcid NUL passwd")
	}
	m := PlainMessage{AuthzID: string(parts[0]), User: string(parts[1]), Password: string(parts[2])}
	switch {
	case m.User == "":
		return PlainMessage{}, errors.New("PLAIN message has an empty user name")
	case m.Password == "":
		return PlainMessage{}, errors.New("PLAIN message has an empty password")
	case m.AuthzID != "" && m.AuthzID != m.User:
		return PlainMessage{}, errors.New("authorization id differs from the user name")
	}
	return m, nil
}

// plainSession is one PLAIN login: one client message, an empty answer.
type plainSession struct {
	users     *UsersFile
	lifetime  time.Duration
	principal string
	finished  bool
}

func (s *plainSession) Mechanism() string { return Plain }

func (s *plainSession) Principal() string { return s.principal }

func (s *plainSession) Lifetime() time.Duration { return s.lifetime }

func (s *plainSession) Step(msg []byte) ([]byte, bool, error) {
	if s.finished {
		return nil, false, ErrIllegalState
	}
	s.finished = true
	m, err := ParsePlain(msg)
	if err != nil {
		return nil, false, failed(Plain, "malformed PLAIN message: "+err.Error())
	}
	if !s.users.Verify(m.User, m.Password) {
		return nil, false, failed(Plain, invalidCredentials)
	}
	s.principal = UserPrincipal(m.User)
	return []byte{}, true, nil
}
