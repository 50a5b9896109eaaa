package sasl

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseClientFirst: the parser never panics, and what it accepts has
// a user, a valid nonce and, re-encoded, parses to the same message.
func FuzzParseClientFirst(f *testing.F) {
	for _, s := range []string{"n,,n=alice,r=abc", "n,a=alice,n=alice,r=abc,tokenauth=true", "n,,n=a=2Cb=3Dc,r=x", "y,,n=u,r=n", "n,,m=x,n=u,r=n", "n,,n=u,r=n,=x", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		c, err := ParseClientFirst(msg)
		if err != nil {
			return
		}
		if c.User == "" || !validNonce(c.Nonce) {
			t.Fatalf("accepted %q as %+v", msg, c)
		}
		enc := func(s string) string { return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s) }
		var b strings.Builder
		b.WriteString("n,")
		if c.AuthzID != "" {
			b.WriteString("a=" + enc(c.AuthzID))
		}
		b.WriteString(",n=" + enc(c.User) + ",r=" + c.Nonce)
		back, err := ParseClientFirst([]byte(b.String()))
		if err != nil || back.User != c.User || back.AuthzID != c.AuthzID || back.Nonce != c.Nonce {
			t.Fatalf("%q → %+v → %q → %+v, %v", msg, c, b.String(), back, err)
		}
	})
}

// FuzzParseClientFinal: never panics; an accepted message has a nonce and
// a proof.
func FuzzParseClientFinal(f *testing.F) {
	for _, s := range []string{"c=biws,r=abc,p=AAAA", "c=biws,r=abc,ext=1,p=AAAA", "c=,r=,p=", "r=abc,c=biws,p=x", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		c, err := ParseClientFinal(msg)
		if err != nil {
			return
		}
		if !validNonce(c.Nonce) || c.Proof == "" {
			t.Fatalf("accepted %q as %+v", msg, c)
		}
	})
}

// FuzzParsePlain: never panics; an accepted message rebuilds exactly.
func FuzzParsePlain(f *testing.F) {
	for _, s := range []string{"\x00alice\x00pw", "alice\x00alice\x00pw", "bob\x00alice\x00pw", "\x00\x00", "a\x00b\x00c\x00d", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		m, err := ParsePlain(msg)
		if err != nil {
			return
		}
		if m.User == "" || m.Password == "" || (m.AuthzID != "" && m.AuthzID != m.User) {
			t.Fatalf("accepted %q as %+v", msg, m)
		}
		if back := []byte(m.AuthzID + "\x00" + m.User + "\x00" + m.Password); !bytes.Equal(back, msg) {
			t.Fatalf("%q rebuilt as %q", msg, back)
		}
	})
}

// FuzzScramSession drives arbitrary client messages through a session
// (this package's parsers, then xdg-go/scram's): it never panics and never
// logs anybody in without the password.
func FuzzScramSession(f *testing.F) {
	f.Add([]byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Add([]byte("n,,n=ghost,r=abc,tokenauth=true"), []byte("c=biws,r=x,p=AAAA"))
	m, _ := ScramMechanismNamed(ScramSHA256)
	cred, err := NewScramCredential(m, "alice-secret", MinIterations)
	if err != nil {
		f.Fatal(err)
	}
	a, err := New(Config{}, StaticScramCredentials{"alice": {ScramSHA256: cred}}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s, err := a.Start(ScramSHA256)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Step(first); err != nil {
			return
		}
		if _, done, err := s.Step(final); done || err == nil {
			t.Fatalf("logged in as %q with %q, %q", s.Principal(), first, final)
		}
	})
}
