package security

import (
	"errors"
	"testing"
)

// TestPrincipalRules: Kafka's rule language, with the examples of Kafka's
// documentation and SslPrincipalMapperTest.
func TestPrincipalRules(t *testing.T) {
	for _, c := range []struct {
		rules, subject, want string
	}{
		{"", "CN=client,OU=eng,O=acme", "CN=client,OU=eng,O=acme"},
		{"DEFAULT", "CN=client,OU=eng", "CN=client,OU=eng"},
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT`, "CN=kafka-svc,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "kafka-svc"},
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, DEFAULT`, "CN=Alice,OU=People,O=acme", "CN=Alice,OU=People,O=acme"},
		{`RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L`, "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "duke@javasoft"},
		{`RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U`, "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "DUKE@JAVASOFT"},
		{`RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U`, "cn=duke,ou=javasoft,dc=sun,dc=com", "DUKE@JAVASOFT"},
		// The first matching rule wins; later ones are not tried.
		{`RULE:^CN=([^,]*).*$/$1/,RULE:^(.*)$/never/`, "CN=first,O=x", "first"},
		// An escaped slash in the pattern and the replacement.
		{`RULE:^CN=(.*?)\/(.*?),.*$/$1\/$2/`, "CN=a/b,O=x", "a/b"},
		// A literal dollar in the replacement.
		{`RULE:^CN=(.*)$/\$$1/`, "CN=cash", "$cash"},
		// Spaces around rules are ignored; a pattern may hold commas.
		{`  RULE:^CN=([^,]*),OU=(.*)$/$2.$1/L ,  DEFAULT  `, "CN=Bob,OU=Ops", "ops.bob"},
	} {
		m, err := ParsePrincipalRules(c.rules)
		if err != nil {
			t.Errorf("%q: %v", c.rules, err)
			continue
		}
		got, err := m.Map(c.subject)
		if err != nil || got != c.want {
			t.Errorf("rules %q subject %q: %q, %v; want %q", c.rules, c.subject, got, err, c.want)
		}
	}
}

func TestPrincipalRulesRefused(t *testing.T) {
	for _, rules := range []string{
		"DEFAUL",
		"RULE:^CN=(.*)$",           // no replacement
		"RULE:^CN=(.*)$/$1/L,junk", // a bad second rule
		"RULE:^CN=(.*$/$1/",        // a pattern that does not compile
		"DEFAULT,RULE:[",
	} {
		if _, err := ParsePrincipalRules(rules); !errors.Is(err, ErrBadTLS) {
			t.Errorf("%q accepted (%v)", rules, err)
		}
	}
	// No rule matching a subject is an error, as Kafka fails the handshake.
	m, err := ParsePrincipalRules(`RULE:^CN=(.*),OU=Services$/$1/`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Map("CN=x,OU=People"); !errors.Is(err, ErrNoPrincipalRule) {
		t.Errorf("unmatched subject: %v", err)
	}
	if p, err := m.CertificatePrincipal(nil); p != Anonymous || err != nil {
		t.Errorf("no certificate: %q, %v", p, err)
	}
}

func FuzzPrincipalRules(f *testing.F) {
	f.Add(`RULE:^CN=(.*?),OU=(.*)$/$1@$2/L,DEFAULT`, "CN=a,OU=b")
	f.Add(`RULE:\/x\\/y/`, "x")
	f.Fuzz(func(t *testing.T, rules, subject string) {
		m, err := ParsePrincipalRules(rules)
		if err != nil {
			return
		}
		_, _ = m.Map(subject)
	})
}
