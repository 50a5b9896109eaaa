package sasl

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/xdg-go/scram"
)

// ClientFirst is a parsed SCRAM client-first message with Kafka's
// extensions (RFC 5802 section 7; KIP-84, KIP-48):
//
//	n,[a=<authzid>],n=<user>,r=<nonce>[,<ext>=<value>]*
//
// Only the "n" channel-binding flag is accepted, as in Kafka: there is no
// SCRAM-PLUS.
type ClientFirst struct {
	AuthzID    string
	User       string
	Nonce      string
	Extensions map[string]string
}

// ParseClientFirst parses a client-first message; names are decoded
// (=2C is ',' and =3D is '=').
func ParseClientFirst(msg []byte) (ClientFirst, error) {
	s := string(msg)
	fields := strings.Split(s, ",")
	if len(fields) < 4 {
		return ClientFirst{}, errors.New("client-first message has fewer than 4 fields")
	}
	if fields[0] != "n" {
		return ClientFirst{}, fmt.Errorf("channel binding flag %.10q, want n", fields[0])
	}
	var c ClientFirst
	var err error
	if fields[1] != "" {
		raw, ok := strings.CutPrefix(fields[1], "a=")
		if !ok {
			return ClientFirst{}, fmt.Errorf("authzid field %.20q", fields[1])
		}
		if c.AuthzID, err = decodeSaslName(raw); err != nil {
			return ClientFirst{}, fmt.Errorf("authzid: %w", err)
		}
	}
	raw, ok := strings.CutPrefix(fields[2], "n=")
	if !ok {
		return ClientFirst{}, fmt.Errorf("user field %.20q", fields[2])
	}
	if c.User, err = decodeSaslName(raw); err != nil {
		return ClientFirst{}, fmt.Errorf("user: %w", err)
	}
	if c.User == "" {
		return ClientFirst{}, errors.New("empty user name")
	}
	if c.Nonce, ok = strings.CutPrefix(fields[3], "r="); !ok || !validNonce(c.Nonce) {
		return ClientFirst{}, fmt.Errorf("nonce field %.20q", fields[3])
	}
	for _, f := range fields[4:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return ClientFirst{}, fmt.Errorf("extension %.20q is not key=value", f)
		}
		if c.Extensions == nil {
			c.Extensions = map[string]string{}
		}
		c.Extensions[k] = v
	}
	return c, nil
}

// TokenAuth reports Kafka's tokenauth=true extension (a delegation token
// in place of a password).
func (c ClientFirst) TokenAuth() bool { return strings.EqualFold(c.Extensions["tokenauth"], "true") }

// decodeSaslName undoes RFC 5802's saslname escaping; a bare '=' is an
// error.
func decodeSaslName(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("bad escape in %.30q", s)
		}
		i += 2
	}
	return b.String(), nil
}

// validNonce: printable ASCII except ',' (RFC 5802's c-nonce).
func validNonce(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < 0x21 || n[i] > 0x7e || n[i] == ',' {
			return false
		}
	}
	return true
}

// ClientFinal is a parsed SCRAM client-final message:
//
//	c=<b64 gs2 header>,r=<nonce>[,<ext>]*,p=<b64 proof>
type ClientFinal struct {
	ChannelBinding string
	Nonce          string
	Proof          string
}

// ParseClientFinal parses a client-final message, without checking it
// against the exchange (the conversation does).
func ParseClientFinal(msg []byte) (ClientFinal, error) {
	fields := strings.Split(string(msg), ",")
	if len(fields) < 3 {
		return ClientFinal{}, errors.New("client-final message has fewer than 3 fields")
	}
	var c ClientFinal
	var ok bool
	if c.ChannelBinding, ok = strings.CutPrefix(fields[0], "c="); !ok {
		return ClientFinal{}, fmt.Errorf("channel binding field %.20q", fields[0])
	}
	if c.Nonce, ok = strings.CutPrefix(fields[1], "r="); !ok || !validNonce(c.Nonce) {
		return ClientFinal{}, fmt.Errorf("nonce field %.20q", fields[1])
	}
	if c.Proof, ok = strings.CutPrefix(fields[len(fields)-1], "p="); !ok || c.Proof == "" {
		return ClientFinal{}, fmt.Errorf("proof field %.20q", fields[len(fields)-1])
	}
	return c, nil
}

// ScramCredentials looks SCRAM credentials up; the CredentialStore (the
// coordination service's /config/users) is one, StaticScramCredentials
// another. Lookup must not block: it is called on the connection's
// goroutine for every login.
type ScramCredentials interface {
	Lookup(user string, mechanism string) (ScramCredential, bool)
}

// StaticScramCredentials is a fixed map of user to mechanism to
// credential, for tests and embedding.
type StaticScramCredentials map[string]map[string]ScramCredential

// Lookup implements ScramCredentials.
func (s StaticScramCredentials) Lookup(user, mechanism string) (ScramCredential, bool) {
	c, ok := s[user][mechanism]
	return c, ok
}

// scramSession is one SCRAM exchange: client-first, server-first,
// client-final, server-final. The server-first message is
// github.com/xdg-go/scram's server conversation's, after the client-first
// message is parsed here for Kafka's extensions; the client-final message
// is checked here, as Kafka checks it (see final).
type scramSession struct {
	mech     ScramMechanism
	creds    ScramCredentials
	secret   []byte // for the decoy salts of unknown users
	lifetime time.Duration

	conv *scram.ServerConversation
	// cred, clientFirstBare, serverFirst and serverNonce are what the
	// client-final message is checked against.
	cred            ScramCredential
	clientFirstBare string
	serverFirst     string
	serverNonce     string
	user            string
	decoy           bool
	reason          string
	step            int
	principal       string
	finished        bool
}

func (s *scramSession) Mechanism() string { return s.mech.Name }

func (s *scramSession) Principal() string { return s.principal }

func (s *scramSession) Lifetime() time.Duration { return s.lifetime }

func (s *scramSession) Step(msg []byte) ([]byte, bool, error) {
	if s.finished {
		return nil, false, ErrIllegalState
	}
	switch s.step {
	case 0:
		s.step++
		return s.first(msg)
	default:
		return s.final(msg)
	}
}

func (s *scramSession) fail(reason string) ([]byte, bool, error) {
	s.finished = true
	return nil, false, failed(s.mech.Name, reason)
}

func (s *scramSession) first(msg []byte) ([]byte, bool, error) {
	c1, err := ParseClientFirst(msg)
	if err != nil {
		return s.fail("malformed client-first message: " + err.Error())
	}
	if c1.AuthzID != "" && c1.AuthzID != c1.User {
		return s.fail("authorization id differs from the user name")
	}
	s.user = c1.User
	cred, ok := s.creds.Lookup(c1.User, s.mech.Name)
	switch {
	case c1.TokenAuth():
		// No delegation tokens exist here: a token login can only fail,
		// and fails at the end like any bad password.
		ok, s.reason = false, "delegation token authentication (tokenauth) is not supported"
	case ok && cred.Iterations < MinIterations:
		ok, s.reason = false, fmt.Sprintf("stored credential has %d iterations, fewer than %d", cred.Iterations, MinIterations)
	case !ok:
		s.reason = invalidCredentials
	}
	if !ok {
		// A decoy credential: a salt stable per user name and keys no
		// password matches, so that an unknown user is refused exactly
		// where a wrong password is, after the proof, and looks the same.
		s.decoy = true
		cred = s.decoyCredential(c1.User)
	}
	hashGen := scram.SHA256
	if s.mech.Name == ScramSHA512 {
		hashGen = scram.SHA512
	}
	srv, err := hashGen.NewServer(func(string) (scram.StoredCredentials, error) {
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(cred.Salt), Iters: cred.Iterations},
			StoredKey:  cred.StoredKey,
			ServerKey:  cred.ServerKey,
		}, nil
	})
	if err != nil {
		return s.fail("scram server: " + err.Error())
	}
	s.conv = srv.NewConversation()
	out, err := s.conv.Step(string(msg))
	if err != nil {
		return s.fail("client-first message: " + err.Error())
	}
	s.cred, s.serverFirst = cred, out
	// The bare message follows the GS2 header "n,[a=authzid],".
	if i := strings.Index(string(msg), ","); i >= 0 {
		if j := strings.Index(string(msg[i+1:]), ","); j >= 0 {
			s.clientFirstBare = string(msg[i+1+j+1:])
		}
	}
	nonce, _, _ := strings.Cut(strings.TrimPrefix(out, "r="), ",")
	s.serverNonce = nonce
	return []byte(out), false, nil
}

// final checks the client-final message as Kafka's ScramSaslServer does,
// which is laxer than RFC 5802 in one way clients depend on: the nonce
// must end with the server's nonce, not equal it (librdkafka sends its own
// nonce followed by the server's whole one). The proof is checked over the
// messages as sent.
func (s *scramSession) final(msg []byte) ([]byte, bool, error) {
	s.finished = true
	cf, err := ParseClientFinal(msg)
	if err != nil {
		return s.fail("malformed client-final message: " + err.Error())
	}
	if s.serverNonce == "" || !strings.HasSuffix(cf.Nonce, s.serverNonce) {
		return s.fail("client-final message: nonce received did not match nonce sent")
	}
	// No channel binding is offered: the GS2 header must say "n".
	if cb, err := base64.StdEncoding.DecodeString(cf.ChannelBinding); err != nil || !strings.HasPrefix(string(cb), "n,") {
		return s.fail("client-final message: channel binding is not the GS2 header of a client without one")
	}
	withoutProof := string(msg[:strings.LastIndex(string(msg), ",p=")])
	authMessage := []byte(s.clientFirstBare + "," + s.serverFirst + "," + withoutProof)
	proof, err := base64.StdEncoding.DecodeString(cf.Proof)
	if err != nil || len(proof) != s.mech.hash().Size() || len(s.cred.StoredKey) != len(proof) {
		return s.fail("malformed client-final message: proof")
	}
	signature := s.mech.hmac(s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ signature[i]
	}
	h := s.mech.hash()
	h.Write(clientKey)
	if !hmac.Equal(h.Sum(nil), s.cred.StoredKey) || s.decoy {
		if s.decoy {
			return s.fail(s.reason)
		}
		return s.fail(invalidCredentials)
	}
	s.principal = UserPrincipal(s.user)
	return []byte("v=" + base64.StdEncoding.EncodeToString(s.mech.hmac(s.cred.ServerKey, authMessage))), true, nil
}

// decoyCredential is the credential an unknown user appears to have: a salt
// derived from the user name and the authenticator's secret (the same on
// every attempt, as a real user's is) and random keys.
func (s *scramSession) decoyCredential(user string) ScramCredential {
	mac := hmac.New(sha256.New, s.secret)
	mac.Write([]byte(s.mech.Name + "\x00" + user))
	c := ScramCredential{Salt: mac.Sum(nil), Iterations: MinIterations,
		StoredKey: make([]byte, s.mech.hash().Size()), ServerKey: make([]byte, s.mech.hash().Size())}
	_, _ = rand.Read(c.StoredKey)
	_, _ = rand.Read(c.ServerKey)
	return c
}

// UserPrincipal is Kafka's principal of an authenticated SASL user.
func UserPrincipal(user string) string { return "User:" + user }
