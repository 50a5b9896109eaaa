package security

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	for name, tc := range map[string]struct {
		in   string
		want []JAASEntry
	}{
		"plain, as the Kafka docs write it": {
			`org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";`,
			[]JAASEntry{{PlainLoginModule, "required", map[string]string{"username": "alice", "password": "alice-secret"}}},
		},
		"scram, spread over lines, flag in capitals, single quotes, comments": {
			"org.apache.kafka.common.security.scram.ScramLoginModule REQUIRED\n" +
				"  // the user\n  username='bob' /* and\n his */ password=\"p;a=s's\"\n ;",
			[]JAASEntry{{ScramLoginModule, "required", map[string]string{"username": "bob", "password": "p;a=s's"}}},
		},
		"escapes and unquoted words": {
			`x.Y optional a=b_c.d-e$f k="q\"\\\n\t\101\0101\477z" tokenauth=true;`,
			[]JAASEntry{{"x.Y", "optional", map[string]string{"a": "b_c.d-e$f", "k": "q\"\\\n\tA\b1\x27" + "7z", "tokenauth": "true"}}},
		},
		"two entries, no options": {
			`a.B sufficient; c.D requisite;`,
			[]JAASEntry{{"a.B", "sufficient", map[string]string{}}, {"c.D", "requisite", map[string]string{}}},
		},
		"unicode in values": {
			`m required username="ü😀" password=ünquoted;`,
			[]JAASEntry{{"m", "required", map[string]string{"username": "ü😀", "password": "ünquoted"}}},
		},
	} {
		got, err := ParseJAAS(tc.in)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !sameEntries(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", name, got, tc.want)
		}
	}
}

func sameEntries(a, b []JAASEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Module != b[i].Module || a[i].Flag != b[i].Flag || !maps.Equal(a[i].Options, b[i].Options) {
			return false
		}
	}
	return true
}

// TestParseJAASRefuses: what Kafka's JaasConfig refuses, and the
// unterminated strings it would quietly accept.
func TestParseJAASRefuses(t *testing.T) {
	for in, want := range map[string]string{
		``:                               "login module not specified",
		`  // only a comment`:            "login module not specified",
		`m`:                              "control flag not specified",
		`m mandatory;`:                   "invalid login module control flag",
		`m required username="a"`:        "not terminated by ';'",
		`m required username;`:           `value not specified for key "username"`,
		`m required username=;`:          `value not specified for key "username"`,
		`m required password=123;`:       `value not specified for key "password"`,
		`m required password=@x;`:        `value not specified for key "password"`,
		`m required password="abc;`:      "unterminated quoted string",
		"m required password=\"ab\nc\";": "unterminated quoted string",
		`m required /* x`:                "unterminated /* comment",
		`= required;`:                    "want a login module class name",
		`m required ="x";`:               "want an option name",
	} {
		_, err := ParseJAAS(in)
		if err == nil || !errors.Is(err, ErrBadJAAS) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseJAAS(%q) = %v, want ErrBadJAAS with %q", in, err, want)
		}
	}
}

func TestSASLFromJAAS(t *testing.T) {
	s, err := SASLFromJAAS(MechanismScramSHA512, ScramLoginModule+` required username="alice" password="";`)
	if err != nil || s != (SASL{MechanismScramSHA512, "alice", ""}) {
		t.Errorf("got %+v, %v", s, err)
	}
	for in, want := range map[string]string{
		`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;`:                  "com.sun.security.auth.module.Krb5LoginModule",
		PlainLoginModule + ` required username="a";`:                                             "needs option password",
		PlainLoginModule + ` required;`:                                                          "username and password",
		PlainLoginModule + ` required username=a password=b; ` + ScramLoginModule + ` required;`: "exactly one",
	} {
		_, err := SASLFromJAAS(MechanismPlain, in)
		if err == nil || !errors.Is(err, ErrBadJAAS) || !strings.Contains(err.Error(), want) {
			t.Errorf("SASLFromJAAS(%q) = %v, want %q", in, err, want)
		}
	}
}

// TestJAASErrorsHideSecrets: a malformed entry's error does not quote the
// values around the fault.
func TestJAASErrorsHideSecrets(t *testing.T) {
	_, err := ParseJAAS(`m required password="hunter2" "hunter3"="x" username "hunter4";`)
	if err == nil || strings.Contains(err.Error(), "hunter") {
		t.Errorf("error %v quotes a value", err)
	}
}

func TestParseMechanism(t *testing.T) {
	for in, want := range map[string]string{"plain": MechanismPlain, " scram-sha-256 ": MechanismScramSHA256, "SCRAM-SHA-512": MechanismScramSHA512} {
		if got, err := ParseMechanism(in); err != nil || got != want {
			t.Errorf("ParseMechanism(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "GSSAPI", "OAUTHBEARER", "SCRAM-SHA-1"} {
		if _, err := ParseMechanism(in); !errors.Is(err, ErrUnknownMechanism) {
			t.Errorf("ParseMechanism(%q) = %v, want ErrUnknownMechanism", in, err)
		}
	}
}

// FuzzParseJAAS: the parser never panics, and what it accepts written back
// in canonical form (every value quoted and escaped) parses to the same.
func FuzzParseJAAS(f *testing.F) {
	for _, s := range []string{
		PlainLoginModule + ` required username="alice" password="alice-secret";`,
		`a.B optional k='v\'\n\101' x=y; c requisite;`,
		"m required /* c */ k=v // c\n;",
		`m required k="unterminated`,
		`-.5 . -x = ;`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		entries, err := ParseJAAS(s)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, e := range entries {
			b.WriteString(quoteJAAS(e.Module) + " " + e.Flag)
			for k, v := range e.Options {
				b.WriteString(" " + quoteJAAS(k) + "=" + quoteJAAS(v))
			}
			b.WriteString(";\n")
		}
		again, err := ParseJAAS(b.String())
		if err != nil {
			t.Fatalf("canonical form %q of %q: %v", b.String(), s, err)
		}
		if !sameEntries(entries, again) {
			t.Fatalf("%q: %+v, canonical form %q: %+v", s, entries, b.String(), again)
		}
	})
}

func quoteJAAS(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(s) + `"`
}
