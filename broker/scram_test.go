package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/sasl"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// scramUpsertion is an AlterUserScramCredentials upsertion of password,
// salted client-side as Kafka's Admin client does.
func scramUpsertion(t *testing.T, user string, mech sasl.ScramMechanism, password string, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	t.Helper()
	salt := []byte("salt-of-" + user)
	salted, err := mech.SaltedPassword(password, salt, int(iterations))
	if err != nil {
		t.Fatal(err)
	}
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = user, mech.Type, iterations, salt, salted
	return u
}

func scramDeletion(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = user, mech
	return d
}

func alterSCRAM(t *testing.T, ctx context.Context, cl kmsg.Requestor, dels []kmsg.AlterUserSCRAMCredentialsRequestDeletion, ups []kmsg.AlterUserSCRAMCredentialsRequestUpsertion) map[string]int16 {
	t.Helper()
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions, req.Upsertions = dels, ups
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("AlterUserScramCredentials: %v", err)
	}
	out := map[string]int16{}
	for _, r := range resp.Results {
		if _, dup := out[r.User]; dup {
			t.Errorf("two results for user %q", r.User)
		}
		out[r.User] = r.ErrorCode
	}
	return out
}

func describeSCRAM(t *testing.T, ctx context.Context, cl kmsg.Requestor, users ...string) *kmsg.DescribeUserSCRAMCredentialsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range users {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		req.Users = append(req.Users, ru)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DescribeUserScramCredentials: %v", err)
	}
	return resp
}

// sha256, sha512 are the two mechanisms.
var sha256, sha512 = sasl.ScramMechanisms[0], sasl.ScramMechanisms[1]

// TestScramCredentialAPIs: AlterUserScramCredentials applies Kafka's
// validation and error codes, Describe lists what was stored, the
// broker's credential cache follows, and the stored credential logs in
// with franz-go's SCRAM client; kadm's password-based upsert works too.
func TestScramCredentialAPIs(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := testenv.Context(t, time.Minute)
	cl := newClient(t, b.Addr())

	got := alterSCRAM(t, ctx, cl,
		[]kmsg.AlterUserSCRAMCredentialsRequestDeletion{scramDeletion("nobody", sha256.Type), scramDeletion("mech0", 0)},
		[]kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
			scramUpsertion(t, "alice", sha256, "alice-secret", 8192),
			scramUpsertion(t, "weak", sha256, "w", 1024),
			scramUpsertion(t, "huge", sha512, "h", 20000),
			scramUpsertion(t, "twice", sha512, "t", 4096), scramUpsertion(t, "twice", sha512, "t", 4096),
			scramUpsertion(t, "", sha256, "e", 4096),
		})
	want := map[string]int16{
		"alice": 0, "nobody": kerr.ResourceNotFound.Code, "mech0": kerr.UnsupportedSaslMechanism.Code,
		"weak": kerr.UnacceptableCredential.Code, "huge": kerr.UnacceptableCredential.Code,
		"twice": kerr.DuplicateResource.Code, "": kerr.UnacceptableCredential.Code,
	}
	for u, code := range want {
		if c, ok := got[u]; !ok || c != code {
			t.Errorf("alter %q: code %d (present %v), want %d", u, c, ok, code)
		}
	}

	resp := describeSCRAM(t, ctx, cl)
	if resp.ErrorCode != 0 || len(resp.Results) != 1 || resp.Results[0].User != "alice" ||
		len(resp.Results[0].CredentialInfos) != 1 || resp.Results[0].CredentialInfos[0].Iterations != 8192 ||
		resp.Results[0].CredentialInfos[0].Mechanism != sha256.Type {
		t.Errorf("describe all: %+v", resp)
	}
	resp = describeSCRAM(t, ctx, cl, "alice", "bob", "dup", "dup", "")
	codes := map[string]int16{}
	for _, r := range resp.Results {
		codes[r.User] = r.ErrorCode
	}
	if len(resp.Results) != 4 || codes["alice"] != 0 || codes["bob"] != kerr.ResourceNotFound.Code ||
		codes["dup"] != kerr.DuplicateResource.Code || codes[""] != kerr.ResourceNotFound.Code {
		t.Errorf("describe alice, bob, dup twice, empty: %+v", resp.Results)
	}

	store, err := b.ScramCredentials()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Await(ctx, func(lookup func(string, string) (sasl.ScramCredential, bool)) bool {
		_, ok := lookup("alice", sasl.ScramSHA256)
		return ok
	}); err != nil {
		t.Fatalf("the broker's cache never saw alice: %v", err)
	}
	a, err := sasl.New(sasl.Config{}, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := scramLogin(ctx, a, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()); err != nil {
		t.Errorf("alice's login with the credential stored through API 51: %v", err)
	}
	if err := scramLogin(ctx, a, scram.Auth{User: "alice", Pass: "nope"}.AsSha256Mechanism()); err == nil {
		t.Error("alice logged in with a wrong password")
	}

	// kadm's upsert: the client salts the password.
	adm := kadm.NewClient(cl)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-secret"}})
	if err != nil || res.Error() != nil {
		t.Fatalf("kadm AlterUserSCRAMs: %v / %v", err, res.Error())
	}
	if err := store.Await(ctx, func(lookup func(string, string) (sasl.ScramCredential, bool)) bool {
		_, ok := lookup("carol", sasl.ScramSHA512)
		return ok
	}); err != nil {
		t.Fatalf("the broker's cache never saw carol: %v", err)
	}
	if err := scramLogin(ctx, a, scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism()); err != nil {
		t.Errorf("carol's login: %v", err)
	}
	got = alterSCRAM(t, ctx, cl, []kmsg.AlterUserSCRAMCredentialsRequestDeletion{scramDeletion("carol", sha512.Type)}, nil)
	if got["carol"] != 0 {
		t.Errorf("deleting carol's credential: code %d", got["carol"])
	}
	if err := store.Await(ctx, func(lookup func(string, string) (sasl.ScramCredential, bool)) bool {
		_, ok := lookup("carol", sasl.ScramSHA512)
		return !ok
	}); err != nil {
		t.Fatalf("carol is still in the broker's cache: %v", err)
	}
}

// scramLogin runs a full exchange of franz-go's client mechanism against a
// session of a, as the SaslAuthenticate handler will.
func scramLogin(ctx context.Context, a *sasl.Authenticator, mech kgosasl.Mechanism) error {
	sess, err := a.Start(mech.Name())
	if err != nil {
		return err
	}
	cs, msg, err := mech.Authenticate(ctx, "127.0.0.1:9092")
	if err != nil {
		return err
	}
	for range 4 {
		out, done, err := sess.Step(msg)
		if err != nil {
			return err
		}
		cdone, next, err := cs.Challenge(out)
		if err != nil {
			return fmt.Errorf("client refused the server: %w", err)
		}
		if done || cdone {
			if done != cdone || sess.Principal() == "" {
				return fmt.Errorf("server done %v, client done %v, principal %q", done, cdone, sess.Principal())
			}
			return nil
		}
		msg = next
	}
	return errors.New("no end after 4 steps")
}

// TestScramCredentialsWithKafkaConfigCommand: a user created through
// AlterUserScramCredentials on a ZooKeeper-backed broker is listed by Kafka
// 2.8's `kafka-configs --zookeeper … --describe --entity-type users`, with
// the credential the broker stored, and its removal by that tool reaches
// the broker's cache.
func TestScramCredentialsWithKafkaConfigCommand(t *testing.T) {
	tools := testenv.Kafka28Tools(t)
	connect := zkTestChroot(t)
	b := newTestBroker(t, func(c *config.Config) {
		c.BrokerID, c.ZooKeeperConnect, c.ZooKeeperSessionTimeout = 1, connect, 6*time.Second
	})
	ctx := testenv.Context(t, 3*time.Minute)
	cl := newClient(t, b.Addr())
	if got := alterSCRAM(t, ctx, cl, nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		scramUpsertion(t, "bob", sha512, "bob-secret", 4096),
	}); got["bob"] != 0 {
		t.Fatalf("creating bob: %v", got)
	}
	store, err := b.ScramCredentials()
	if err != nil {
		t.Fatal(err)
	}
	cred, ok := sasl.ScramCredential{}, false
	if err := store.Await(ctx, func(lookup func(string, string) (sasl.ScramCredential, bool)) bool {
		cred, ok = lookup("bob", sasl.ScramSHA512)
		return ok
	}); err != nil {
		t.Fatalf("the broker's cache never saw bob: %v", err)
	}

	run := func(args ...string) string {
		t.Helper()
		cmd := tools.Command(ctx, "kafka.admin.ConfigCommand", append([]string{"--zookeeper", connect}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("kafka-configs %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	out := run("--describe", "--entity-type", "users")
	if !strings.Contains(out, "user-principal 'bob'") || !strings.Contains(out, "SCRAM-SHA-512="+cred.String()) {
		t.Errorf("kafka-configs --describe does not list bob's SCRAM-SHA-512 credential %s:\n%s", cred, out)
	}
	run("--alter", "--entity-type", "users", "--entity-name", "bob", "--delete-config", "SCRAM-SHA-512")
	if err := store.Await(ctx, func(lookup func(string, string) (sasl.ScramCredential, bool)) bool {
		_, ok := lookup("bob", sasl.ScramSHA512)
		return !ok
	}); err != nil {
		t.Fatalf("bob, removed by kafka-configs, is still in the broker's cache: %v", err)
	}
	if resp := describeSCRAM(t, ctx, cl, "bob"); len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.ResourceNotFound.Code {
		t.Errorf("describe bob after the removal: %+v", resp.Results)
	}
}
