package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/tributary/tributary/broker/entityconfig"
)

// Mechanism names, as sasl.enabled.mechanisms and SaslHandshake spell them.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// MinIterations is the fewest SCRAM iterations accepted, for both SCRAM
// mechanisms (Kafka's ScramMechanism.minIterations); MaxIterations the most
// AlterUserScramCredentials stores (Kafka's limit).
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// scramSaltLen is the salt length of credentials made here (Kafka's
// ScramFormatter uses a random string of about this size).
const scramSaltLen = 32

// ScramMechanism is one of the two SCRAM mechanisms.
type ScramMechanism struct {
	// Name is ScramSHA256 or ScramSHA512; it is also the key of the
	// credential in /config/users/<user>.
	Name string
	// Type is the mechanism's number in DescribeUserScramCredentials and
	// AlterUserScramCredentials (1 and 2).
	Type int8
	hash func() hash.Hash
}

// ScramMechanisms are the SCRAM mechanisms, in Kafka's order.
var ScramMechanisms = []ScramMechanism{
	{Name: ScramSHA256, Type: 1, hash: sha256.New},
	{Name: ScramSHA512, Type: 2, hash: sha512.New},
}

// ScramMechanismNamed returns the SCRAM mechanism called name.
func ScramMechanismNamed(name string) (ScramMechanism, bool) {
	for _, m := range ScramMechanisms {
		if m.Name == name {
			return m, true
		}
	}
	return ScramMechanism{}, false
}

// ScramMechanismOfType returns the SCRAM mechanism numbered t in the admin
// APIs; 0 (UNKNOWN) and other numbers are not one.
func ScramMechanismOfType(t int8) (ScramMechanism, bool) {
	for _, m := range ScramMechanisms {
		if m.Type == t {
			return m, true
		}
	}
	return ScramMechanism{}, false
}

// ScramCredential is what the server keeps of a SCRAM password (RFC 5802
// section 3): never the password, nor the salted password.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

// NewScramCredential derives the credential of password with a fresh
// random salt, as Kafka's ConfigCommand does.
func NewScramCredential(m ScramMechanism, password string, iterations int) (ScramCredential, error) {
	salt := make([]byte, scramSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return ScramCredential{}, fmt.Errorf("sasl: generating a salt: %w", err)
	}
	salted, err := m.SaltedPassword(password, salt, iterations)
	if err != nil {
		return ScramCredential{}, err
	}
	return m.CredentialFromSalted(salt, salted, iterations), nil
}

// SaltedPassword is RFC 5802's Hi(password, salt, iterations): PBKDF2 with
// the mechanism's HMAC. The password is used as its UTF-8 bytes, without
// SASLprep, as Kafka's clients and tools do.
func (m ScramMechanism) SaltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	if iterations < 1 {
		return nil, fmt.Errorf("%w: %d iterations", ErrUnacceptableCredential, iterations)
	}
	k, err := pbkdf2.Key(m.hash, password, salt, iterations, m.hash().Size())
	if err != nil {
		return nil, fmt.Errorf("sasl: salting a password: %w", err)
	}
	return k, nil
}

// CredentialFromSalted is Kafka's ScramFormatter.generateCredential: the
// stored and server keys of a salted password (what
// AlterUserScramCredentials carries).
func (m ScramMechanism) CredentialFromSalted(salt, salted []byte, iterations int) ScramCredential {
	clientKey := m.hmac(salted, []byte("Client Key"))
	h := m.hash()
	h.Write(clientKey)
	return ScramCredential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  h.Sum(nil),
		ServerKey:  m.hmac(salted, []byte("Server Key")),
		Iterations: iterations,
	}
}

func (m ScramMechanism) hmac(key, msg []byte) []byte {
	mac := hmac.New(m.hash, key)
	mac.Write(msg)
	return mac.Sum(nil)
}

// verifyPassword reports, in constant time over the keys, whether password
// is the one c was made from.
func (m ScramMechanism) verifyPassword(c ScramCredential, password string) bool {
	salted, err := m.SaltedPassword(password, c.Salt, c.Iterations)
	if err != nil {
		return false
	}
	got := m.CredentialFromSalted(c.Salt, salted, c.Iterations)
	return hmac.Equal(got.StoredKey, c.StoredKey)
}

// Credential string keys (Kafka's ScramCredentialUtils); frozen.
const (
	saltKey       = "salt"
	storedKeyKey  = "stored_key"
	serverKeyKey  = "server_key"
	iterationsKey = "iterations"
)

// String renders c as Kafka stores it in /config/users/<user>:
// salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>
// (standard base64 with padding).
func (c ScramCredential) String() string {
	enc := base64.StdEncoding.EncodeToString
	return saltKey + "=" + enc(c.Salt) + "," + storedKeyKey + "=" + enc(c.StoredKey) + "," +
		serverKeyKey + "=" + enc(c.ServerKey) + "," + iterationsKey + "=" + strconv.Itoa(c.Iterations)
}

// ParseScramCredential reads Kafka's credential string: exactly the four
// keys, in any order (Kafka's credentialFromString).
func ParseScramCredential(s string) (ScramCredential, error) {
	fields := map[string]string{}
	for _, tok := range strings.Split(s, ",") {
		i := strings.IndexByte(tok, '=')
		if i <= 0 {
			return ScramCredential{}, fmt.Errorf("%w: %q is not key=value", ErrMalformedCredential, tok)
		}
		fields[tok[:i]] = tok[i+1:]
	}
	var c ScramCredential
	var err error
	dec := func(k string) []byte {
		v, ok := fields[k]
		if !ok {
			err = fmt.Errorf("%w: no %s", ErrMalformedCredential, k)
			return nil
		}
		b, e := base64.StdEncoding.DecodeString(v)
		if e != nil && err == nil {
			err = fmt.Errorf("%w: %s: %w", ErrMalformedCredential, k, e)
		}
		return b
	}
	c.Salt, c.StoredKey, c.ServerKey = dec(saltKey), dec(storedKeyKey), dec(serverKeyKey)
	if err != nil {
		return ScramCredential{}, err
	}
	n, e := strconv.Atoi(fields[iterationsKey])
	if e != nil || n < 1 {
		return ScramCredential{}, fmt.Errorf("%w: iterations %q", ErrMalformedCredential, fields[iterationsKey])
	}
	if len(fields) != 4 {
		return ScramCredential{}, fmt.Errorf("%w: %d keys, want salt, stored_key, server_key and iterations", ErrMalformedCredential, len(fields))
	}
	c.Iterations = n
	return c, nil
}

// SanitizeUser is Kafka's Sanitizer.sanitize, which names the node of a
// user under /config/users: URL-encoded UTF-8, with '*' as %2A and space
// as %20.
func SanitizeUser(name string) string { return entityconfig.Sanitize(name) }

// DesanitizeUser is Kafka's Sanitizer.desanitize (URLDecoder.decode).
func DesanitizeUser(node string) (string, error) {
	s, err := entityconfig.Desanitize(node)
	if err != nil {
		return "", fmt.Errorf("%w: user node: %w", ErrMalformedCredential, err)
	}
	return s, nil
}
