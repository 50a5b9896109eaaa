package broker

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"golang.org/x/crypto/bcrypt"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/sasl"
	"github.com/tributary/tributary/internal/security"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// saslBroker is a broker with PLAINTEXT (for administration),
// SASL_PLAINTEXT and SASL_SSL listeners, PLAIN, SCRAM-SHA-256 and
// SCRAM-SHA-512 enabled, and users alice (SCRAM, both mechanisms) and
// pat (PLAIN).
type saslBroker struct {
	*testBroker
	files *tlsFiles
	// usersFile is the PLAIN users file.
	usersFile string
}

const (
	aliceSecret = "alice-secret"
	patSecret   = "pat-secret"
)

// writeUsersFile writes a PLAIN users file of user:password pairs.
func writeUsersFile(t testing.TB, path string, users ...string) {
	t.Helper()
	var data []byte
	for i := 0; i+1 < len(users); i += 2 {
		h, err := bcrypt.GenerateFromPassword([]byte(users[i+1]), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		data = fmt.Appendf(data, "%s:%s\n", users[i], h)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func newSASLBroker(t *testing.T, mutate func(*config.Config), opts ...Option) *saslBroker {
	t.Helper()
	sb := &saslBroker{files: newTLSFiles(t)}
	cfg := sb.config(t)
	if mutate != nil {
		mutate(&cfg)
	}
	sb.testBroker = startTestBroker(t, cfg, opts...)
	sb.addScramUser(t, "alice", aliceSecret)
	return sb
}

// config is the configuration of a saslBroker, writing its users file.
func (b *saslBroker) config(t *testing.T) config.Config {
	t.Helper()
	b.usersFile = b.files.path("plain-users")
	writeUsersFile(t, b.usersFile, "pat", patSecret)
	sc := sasl.Config{Mechanisms: []string{sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512}, PlainUsersFile: b.usersFile}
	return config.Config{
		Listeners:              "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		LogDirs:                []string{t.TempDir()},
		RetentionCheckInterval: time.Hour,
		TLS:                    b.files.serverTLS(security.ClientAuthNone),
		SASL:                   config.SASL{Listeners: map[string]sasl.Config{"SASL_PLAINTEXT": sc, "SASL_SSL": sc}},
	}
}

// addScramUser gives user both SCRAM credentials through the broker's
// PLAINTEXT listener and waits until its cache has them.
func (b *saslBroker) addScramUser(t *testing.T, user, password string) {
	t.Helper()
	ctx := testenv.Context(t, time.Minute)
	cl := newClient(t, b.ListenerAddr("PLAINTEXT"))
	if got := alterSCRAM(t, ctx, cl, nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		scramUpsertion(t, user, sha256, password, 4096),
		scramUpsertion(t, user, sha512, password, 4096),
	}); got[user] != 0 {
		t.Fatalf("creating %s: %v", user, got)
	}
	b.awaitUser(t, ctx, user)
}

// awaitUser waits until the broker's credential cache has both of user's
// SCRAM credentials.
func (b *saslBroker) awaitUser(t *testing.T, ctx context.Context, user string) {
	t.Helper()
	store, err := b.ScramCredentials()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Await(ctx, func(lookup func(string, string) (sasl.ScramCredential, bool)) bool {
		_, ok1 := lookup(user, sasl.ScramSHA256)
		_, ok2 := lookup(user, sasl.ScramSHA512)
		return ok1 && ok2
	}); err != nil {
		t.Fatalf("the broker's cache never saw %s: %v", user, err)
	}
}

// mechanism is franz-go's client mechanism for name.
func mechanism(name, user, password string) kgosasl.Mechanism {
	switch name {
	case sasl.Plain:
		return plain.Auth{User: user, Pass: password}.AsMechanism()
	case sasl.ScramSHA256:
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	}
	return scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
}

// saslClient returns franz-go options for listener (SASL_PLAINTEXT or
// SASL_SSL) logging in with mech.
func (b *saslBroker) saslClient(t *testing.T, listener string, mech kgosasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	all := []kgo.Opt{kgo.SASL(mech)}
	if listener == "SASL_SSL" {
		all = append(all, kgo.DialTLSConfig(b.files.clientTLS(nil)))
	}
	return newClient(t, b.ListenerAddr(listener), append(all, opts...)...)
}

// TestSASLRoundTrips: franz-go produces and consumes over SASL_PLAINTEXT
// and SASL_SSL with each of PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, the
// records read back as written, and the broker knows each connection's
// principal.
func TestSASLRoundTrips(t *testing.T) {
	var seen principals
	b := newSASLBroker(t, func(c *config.Config) { c.NumPartitions = 1 }, withPrincipalHook(seen.hook))
	ctx := testenv.Context(t, 2*time.Minute)
	for _, listener := range []string{"SASL_PLAINTEXT", "SASL_SSL"} {
		for _, m := range []string{sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512} {
			t.Run(listener+"/"+m, func(t *testing.T) {
				user, password := "alice", aliceSecret
				if m == sasl.Plain {
					user, password = "pat", patSecret
				}
				cl := b.saslClient(t, listener, mechanism(m, user, password), kgo.AllowAutoTopicCreation())
				topic := fmt.Sprintf("sasl-%s-%s", listener, m)
				tlsRoundTrip(t, ctx, cl, topic, func(opts ...kgo.Opt) *kgo.Client {
					return b.saslClient(t, listener, mechanism(m, user, password), opts...)
				})
				if !seen.saw(listener + " User:" + user) {
					t.Errorf("the broker never saw principal User:%s on %s", user, listener)
				}
			})
		}
	}
}
