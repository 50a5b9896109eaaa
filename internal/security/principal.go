package security

import (
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Anonymous is the principal of a connection that did not authenticate
// (PLAINTEXT, or TLS without a client certificate), as Kafka names it.
const Anonymous = "User:ANONYMOUS"

// PrincipalMapper turns a certificate subject into a user name with Kafka's
// ssl.principal.mapping.rules: a comma-separated list of
//
//	RULE:pattern/replacement/[LU]    pattern must match the whole subject
//	DEFAULT                          the subject unchanged
//
// tried in order; the first that matches names the user. Pattern and
// replacement escape '/' and '\' with a backslash; the replacement refers
// to groups as $1; a trailing L or U lower- or upper-cases the result. A
// subject no rule matches is refused (Kafka fails the handshake). The
// zero value maps with DEFAULT alone. Safe for concurrent use.
type PrincipalMapper struct {
	rules []mappingRule
}

type mappingRule struct {
	isDefault bool
	pattern   *regexp.Regexp
	template  string // Go Expand syntax
	lower     bool
	upper     bool
}

// ErrNoPrincipalRule is a certificate subject no ssl.principal.mapping.rules
// rule matches.
var ErrNoPrincipalRule = errors.New("no ssl.principal.mapping.rules rule matches the certificate subject")

// ruleSplitter is Kafka's SslPrincipalMapper.RULE_SPLITTER, in RE2: a rule,
// then a comma or the end.
var ruleSplitter = regexp.MustCompile(`\s*((DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)[^,]*?|(.*?))\s*(,\s*|$)`)

// ParsePrincipalRules reads ssl.principal.mapping.rules; "" is DEFAULT.
func ParsePrincipalRules(s string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{}
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	rest := s
	for rest != "" {
		loc := ruleSplitter.FindStringSubmatchIndex(rest)
		if loc == nil || loc[0] != 0 || loc[1] == 0 {
			return nil, fmt.Errorf("%w: ssl.principal.mapping.rules: cannot parse %q", ErrBadTLS, rest)
		}
		group := func(i int) string {
			if loc[2*i] < 0 {
				return ""
			}
			return rest[loc[2*i]:loc[2*i+1]]
		}
		switch {
		case group(2) != "":
			m.rules = append(m.rules, mappingRule{isDefault: true})
		case loc[6] >= 0:
			re, err := regexp.Compile(group(3))
			if err != nil {
				return nil, fmt.Errorf("%w: ssl.principal.mapping.rules: pattern %q: %v", ErrBadTLS, group(3), err)
			}
			m.rules = append(m.rules, mappingRule{
				pattern:  re,
				template: javaReplacement(group(4)),
				lower:    group(5) == "L",
				upper:    group(5) == "U",
			})
		default:
			return nil, fmt.Errorf("%w: ssl.principal.mapping.rules: invalid rule %q", ErrBadTLS, group(6))
		}
		rest = rest[loc[1]:]
	}
	return m, nil
}

// javaReplacement turns a java.util.regex replacement ($1, \x a literal x)
// into a regexp.Expand template.
func javaReplacement(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(s[i])
			}
		case c == '$':
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j == i+1 {
				b.WriteString("$$")
				continue
			}
			b.WriteString("${" + s[i+1:j] + "}")
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Map returns the user name for subject, a distinguished name in RFC 2253
// form (as SubjectDN renders it).
func (m *PrincipalMapper) Map(subject string) (string, error) {
	if m == nil || len(m.rules) == 0 {
		return subject, nil
	}
	for _, r := range m.rules {
		if r.isDefault {
			return subject, nil
		}
		match := r.pattern.FindStringSubmatchIndex(subject)
		if match == nil || match[0] != 0 || match[1] != len(subject) {
			continue // Kafka's Matcher.matches: the whole subject
		}
		out := string(r.pattern.ExpandString(nil, r.template, subject, match))
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w: %q", ErrNoPrincipalRule, subject)
}

// SubjectDN renders a certificate's subject as Java's
// X500Principal.getName() does (RFC 2253, most specific first: "CN=client,
// OU=eng,O=acme" without spaces), the form Kafka's rules are written for.
func SubjectDN(c *x509.Certificate) string { return c.Subject.String() }

// CertificatePrincipal is the Kafka principal of a TLS peer: User:<mapped
// subject> for a client certificate, Anonymous without one.
func (m *PrincipalMapper) CertificatePrincipal(peer []*x509.Certificate) (string, error) {
	if len(peer) == 0 {
		return Anonymous, nil
	}
	name, err := m.Map(SubjectDN(peer[0]))
	if err != nil {
		return "", err
	}
	return "User:" + name, nil
}
