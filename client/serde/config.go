package serde

import (
	"errors"
	"net/url"
	"strings"

	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/security"
)

// ClientKeys are the keys ClientConfigFromProperties reads (without their
// prefix): Confluent's schema registry client keys.
var ClientKeys = append([]string{
	"schema.registry.url", "basic.auth.credentials.source", "basic.auth.user.info",
	"schema.registry.basic.auth.user.info",
}, prefixed("schema.registry.", security.TLSKeys)...)

func prefixed(prefix string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = prefix + k
	}
	return out
}

// ClientConfigFromProperties reads Confluent's registry client keys under
// prefix ("" for a client's own file):
//
//	schema.registry.url                    the registry's base URL
//	basic.auth.credentials.source          USER_INFO (default) or URL (user:password@ in the URL)
//	basic.auth.user.info                   user:password (Java's schema.registry.basic.auth.user.info too);
//	                                       ${env:NAME} and ${file:PATH[:KEY]} references are expanded
//	schema.registry.ssl.truststore.*       trust for an https URL (default: the system roots)
//	schema.registry.ssl.keystore.*, schema.registry.ssl.key.password   a client certificate
//
// and the other schema.registry.ssl.* keys of security.TLS. Problems are
// recorded in p.
func ClientConfigFromProperties(p *properties.Props, prefix string) ClientConfig {
	c := ClientConfig{
		URL: p.String(prefix + "schema.registry.url"),
		TLS: security.TLSFromProperties(p, prefix+"schema.registry."),
	}
	info := p.String(prefix + "basic.auth.user.info")
	if alt := p.String(prefix + "schema.registry.basic.auth.user.info"); alt != "" {
		if info != "" && info != alt {
			p.Reject(prefix+"schema.registry.basic.auth.user.info", errors.New("differs from basic.auth.user.info; give one"))
		}
		info = alt
	}
	srcKey := prefix + "basic.auth.credentials.source"
	switch src := strings.ToUpper(p.String(srcKey)); src {
	case "", "USER_INFO":
		if info != "" {
			if v, err := security.ExpandSecrets(info); err != nil {
				p.Reject(prefix+"basic.auth.user.info", err)
			} else {
				info = v
			}
			user, pass, ok := strings.Cut(info, ":")
			if !ok || user == "" {
				p.Reject(prefix+"basic.auth.user.info", errors.New("want user:password"))
			}
			c.Username, c.Password = user, pass
		} else if src != "" {
			p.Reject(srcKey, errors.New("USER_INFO needs basic.auth.user.info"))
		}
	case "URL":
		u, err := url.Parse(c.URL)
		if err != nil || u.User == nil {
			p.Reject(srcKey, errors.New("URL needs user:password@ in schema.registry.url"))
			break
		}
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
		u.User = nil
		c.URL = u.String()
	default:
		p.Reject(srcKey, errors.New("want USER_INFO or URL (SASL_INHERIT is not supported)"))
	}
	return c
}
