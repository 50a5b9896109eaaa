package security

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/tributary/tributary/internal/properties"
)

// secretRef is Kafka's config provider reference, ${provider:[path:]key}.
var secretRef = regexp.MustCompile(`\$\{([A-Za-z0-9_]+):([^}]*)\}`)

// ExpandSecrets replaces, anywhere in v, the references to secrets kept out
// of the configuration file and the command line:
//
//	${env:NAME}        the environment variable NAME (Kafka's EnvVarConfigProvider)
//	${file:PATH:KEY}   the value of KEY in the properties file PATH (Kafka's FileConfigProvider)
//	${file:PATH}       the whole file PATH, without its trailing newline
//
// PATH may not contain ':' or '}'. Kafka needs config.providers set before
// it expands references; we expand them in the secret-bearing keys
// (passwords, sasl.jaas.config, inline keys) always, and leave references to
// other providers as they are. A missing variable, file or key is an error
// wrapping ErrSecret that names the reference but never a secret.
func ExpandSecrets(v string) (string, error) {
	var firstErr error
	out := secretRef.ReplaceAllStringFunc(v, func(ref string) string {
		m := secretRef.FindStringSubmatch(ref)
		val, ok, err := resolve(m[1], m[2])
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%w: %s: %v", ErrSecret, ref, err)
		}
		if !ok {
			return ref
		}
		return val
	})
	if firstErr != nil {
		return "", firstErr
	}
	return out, nil
}

// resolve returns the value of one reference; ok is false for a provider
// we do not know (the reference stays as written).
func resolve(provider, rest string) (val string, ok bool, err error) {
	switch provider {
	case "env":
		v, set := os.LookupEnv(rest)
		if !set {
			return "", true, fmt.Errorf("environment variable %s is not set", rest)
		}
		return v, true, nil
	case "file":
		path, key, hasKey := strings.Cut(rest, ":")
		data, err := os.ReadFile(path)
		if err != nil {
			return "", true, err
		}
		if !hasKey {
			return strings.TrimRight(string(data), "\r\n"), true, nil
		}
		props, err := properties.Read(strings.NewReader(string(data)))
		if err != nil {
			return "", true, fmt.Errorf("%s: %w", path, err)
		}
		v, found := props[key]
		if !found {
			return "", true, fmt.Errorf("%s has no key %s", path, key)
		}
		return v, true, nil
	}
	return "", false, nil
}
