package sasl

import (
	"errors"
	"strings"
	"testing"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func scramAuthenticator(t *testing.T, creds ScramCredentials) *Authenticator {
	t.Helper()
	a, err := New(Config{Mechanisms: []string{ScramSHA256, ScramSHA512}}, creds, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustCredential(t *testing.T, mech, password string, iterations int) ScramCredential {
	t.Helper()
	m, _ := ScramMechanismNamed(mech)
	c, err := NewScramCredential(m, password, iterations)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestScramWithFranzGoClient: franz-go's SCRAM client logs in with the
// right password for both mechanisms (and checks the server's signature),
// and a wrong password and an unknown user are refused at the same step
// with the same message.
func TestScramWithFranzGoClient(t *testing.T) {
	creds := StaticScramCredentials{"alice": {
		ScramSHA256: mustCredential(t, ScramSHA256, "alice-secret", 8192),
		ScramSHA512: mustCredential(t, ScramSHA512, "alice-secret", 4096),
	}}
	a := scramAuthenticator(t, creds)
	for _, tc := range []struct {
		name string
		mech func(scram.Auth) kgosasl.Mechanism
	}{
		{ScramSHA256, scram.Auth.AsSha256Mechanism},
		{ScramSHA512, scram.Auth.AsSha512Mechanism},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess, err := login(t, a, tc.mech(scram.Auth{User: "alice", Pass: "alice-secret"}))
			if err != nil {
				t.Fatalf("right password refused: %v (%s)", err, Reason(err))
			}
			if got := sess.Principal(); got != "User:alice" {
				t.Errorf("principal %q, want User:alice", got)
			}
			if _, _, err := sess.Step([]byte("again")); !errors.Is(err, ErrIllegalState) {
				t.Errorf("Step after done: %v, want ErrIllegalState", err)
			}
			var msgs []string
			for _, auth := range []scram.Auth{{User: "alice", Pass: "wrong"}, {User: "mallory", Pass: "alice-secret"}} {
				_, err := login(t, a, tc.mech(auth))
				if !errors.Is(err, ErrAuthenticationFailed) {
					t.Fatalf("%s/%s: %v, want ErrAuthenticationFailed", auth.User, auth.Pass, err)
				}
				msgs = append(msgs, err.Error()+" | "+Reason(err))
			}
			if msgs[0] != msgs[1] {
				t.Errorf("wrong password and unknown user differ:\n%s\n%s", msgs[0], msgs[1])
			}
			if strings.Contains(msgs[0], "alice") || strings.Contains(msgs[1], "mallory") {
				t.Errorf("message names the user: %s", msgs)
			}
		})
	}
}

// TestScramUnknownUserLooksKnown: the server-first message of an unknown
// user has a stable salt and the minimum iterations, like a real user's.
func TestScramUnknownUserLooksKnown(t *testing.T) {
	a := scramAuthenticator(t, StaticScramCredentials{})
	salt := func() string {
		s, _ := a.Start(ScramSHA256)
		out, done, err := s.Step([]byte("n,,n=ghost,r=abcdefgh"))
		if err != nil || done {
			t.Fatalf("client-first of an unknown user: %v done=%v", err, done)
		}
		for _, f := range strings.Split(string(out), ",") {
			if strings.HasPrefix(f, "s=") {
				if !strings.Contains(string(out), ",i=4096") {
					t.Errorf("server-first %q: want i=4096", out)
				}
				return f
			}
		}
		t.Fatalf("server-first %q has no salt", out)
		return ""
	}
	if a, b := salt(), salt(); a != b {
		t.Errorf("salts of one unknown user differ: %s, %s", a, b)
	}
}

// TestScramRefusals: delegation tokens, another authzid, too few stored
// iterations and malformed messages are refused; unknown extensions are
// ignored, as Kafka does.
func TestScramRefusals(t *testing.T) {
	creds := StaticScramCredentials{
		"alice": {ScramSHA256: mustCredential(t, ScramSHA256, "pw", 4096)},
		"weak":  {ScramSHA256: mustCredential(t, ScramSHA256, "pw", 1024)},
	}
	a := scramAuthenticator(t, creds)
	if _, err := login(t, a, scram.Auth{User: "alice", Pass: "pw", IsToken: true}.AsSha256Mechanism()); !errors.Is(err, ErrAuthenticationFailed) {
		t.Errorf("tokenauth=true: %v, want ErrAuthenticationFailed", err)
	} else if !strings.Contains(Reason(err), "tokenauth") {
		t.Errorf("tokenauth reason %q", Reason(err))
	}
	if _, err := login(t, a, scram.Auth{User: "alice", Pass: "pw", Zid: "root"}.AsSha256Mechanism()); !errors.Is(err, ErrAuthenticationFailed) {
		t.Errorf("authzid root for alice: %v, want ErrAuthenticationFailed", err)
	}
	if _, err := login(t, a, scram.Auth{User: "alice", Pass: "pw", Zid: "alice"}.AsSha256Mechanism()); err != nil {
		t.Errorf("authzid equal to the user: %v", err)
	}
	if _, err := login(t, a, scram.Auth{User: "weak", Pass: "pw"}.AsSha256Mechanism()); !errors.Is(err, ErrAuthenticationFailed) {
		t.Errorf("1024 stored iterations: %v, want ErrAuthenticationFailed", err)
	}
	if _, err := login(t, a, scram.Auth{User: "alice", Pass: "pw"}.AsSha512Mechanism()); !errors.Is(err, ErrAuthenticationFailed) {
		t.Errorf("SCRAM-SHA-512 without a SHA-512 credential: %v", err)
	}
	s, _ := a.Start(ScramSHA256)
	if _, _, err := s.Step([]byte("n,,n=alice,r=abc,unknownext=1")); err != nil {
		t.Errorf("unknown extension: %v, want ignored", err)
	}
	for _, msg := range []string{"", "y,,n=alice,r=abc", "n,,n=al=ice,r=abc", "n,,n=,r=abc", "n,,m=x,n=alice,r=abc", "p=tls-unique,,n=alice,r=abc"} {
		s, _ := a.Start(ScramSHA256)
		if _, _, err := s.Step([]byte(msg)); !errors.Is(err, ErrAuthenticationFailed) {
			t.Errorf("client-first %q: %v, want ErrAuthenticationFailed", msg, err)
		}
	}
	s, _ = a.Start(ScramSHA256)
	if _, _, err := s.Step([]byte("n,,n=alice,r=abc")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Step([]byte("c=biws,r=wrongnonce,p=AAAA")); !errors.Is(err, ErrAuthenticationFailed) {
		t.Errorf("client-final with another nonce: %v", err)
	}
	if _, err := a.Start("GSSAPI"); !errors.Is(err, ErrUnsupportedMechanism) {
		t.Errorf("GSSAPI: %v, want ErrUnsupportedMechanism", err)
	}
	if _, err := a.Start(Plain); !errors.Is(err, ErrUnsupportedMechanism) {
		t.Errorf("PLAIN (not enabled): %v, want ErrUnsupportedMechanism", err)
	}
}

// TestScramCredentialFormat: Kafka's credential string round-trips, bad
// ones are refused, and a credential verifies its own password only.
func TestScramCredentialFormat(t *testing.T) {
	c := mustCredential(t, ScramSHA512, "pencil", 4096)
	back, err := ParseScramCredential(c.String())
	if err != nil || back.String() != c.String() {
		t.Fatalf("round trip: %v\n%s\n%s", err, c, back)
	}
	for _, bad := range []string{"", "salt=AA==", "salt=AA==,stored_key=AA==,server_key=AA==,iterations=x",
		"salt=!!,stored_key=AA==,server_key=AA==,iterations=4096", "salt=AA==,stored_key=AA==,server_key=AA==,iterations=4096,extra=1"} {
		if _, err := ParseScramCredential(bad); !errors.Is(err, ErrMalformedCredential) {
			t.Errorf("ParseScramCredential(%q): %v, want ErrMalformedCredential", bad, err)
		}
	}
	m, _ := ScramMechanismNamed(ScramSHA256)
	salt := []byte{0x5b, 0x6d, 0x99, 0x68, 0x9d, 0x12, 0x35, 0x8e, 0xec, 0xa0, 0x4b, 0x14, 0x12, 0x36, 0xfa, 0x81}
	salted, err := m.SaltedPassword("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	got := m.CredentialFromSalted(salt, salted, 4096)
	if !m.verifyPassword(got, "pencil") || m.verifyPassword(got, "pencil2") {
		t.Error("verifyPassword disagrees with the credential")
	}
}

func TestSanitizeUser(t *testing.T) {
	for in, want := range map[string]string{"alice": "alice", "a b": "a%20b", "*": "%2A", "u@x.com": "u%40x.com", "é": "%C3%A9", "a+b": "a%2Bb"} {
		if got := SanitizeUser(in); got != want {
			t.Errorf("SanitizeUser(%q) = %q, want %q", in, got, want)
		}
		if back, err := DesanitizeUser(SanitizeUser(in)); err != nil || back != in {
			t.Errorf("DesanitizeUser(SanitizeUser(%q)) = %q, %v", in, back, err)
		}
	}
}
