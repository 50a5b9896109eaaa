package pipeline

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/security"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// TestDemoSecure is TestDemoEmbedded secured (Config.Secure), scaled down:
// the producers, the mirror's sources, the loader (a scheduled child
// process reading its password through ${file:...}) and the audit service
// on SASL_SSL, the mirror's target on SSL with its client certificate, the
// registry and the dashboard on HTTPS with basic authentication. The
// exactly-once check and the audit's completeness must pass, and meanwhile
// the clusters must refuse whoever does not authenticate: a PLAINTEXT
// client, a TLS client without credentials, a registry request without a
// password.
func TestDemoSecure(t *testing.T) {
	t.Parallel()
	logs := &testproc.SyncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	p, err := Start(ctx, Config{
		Dir: dir, Rate: 50, AuditWindow: 5 * time.Second, AuditInterval: time.Second,
		LoadInterval: 2 * time.Second, LoaderScheduled: true, Executable: testproc.Binary(t),
		Secure: true, Logger: testLogger(t, logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var out testproc.SyncBuffer
	p.PrintBanner(&out)
	checked := make(chan struct{})
	res, err := p.RunFor(ctx, DemoOptions{Duration: 15 * time.Second, Drain: DefaultDemoDrain, Progress: 5 * time.Second, During: func(ctx context.Context, p *Pipeline) error {
		defer close(checked)
		checkRefused(t, ctx, p, dir)
		checkLeastPrivilege(t, ctx, p)
		return nil
	}}, &out)
	if res != nil {
		res.Print(&out, p)
	}
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	<-checked
	if res.Produced < 500 || res.Loaded != res.Produced || res.Mirrored < res.Produced {
		t.Errorf("produced %d, mirrored %d, loaded %d", res.Produced, res.Mirrored, res.Loaded)
	}
	if res.Windows < 2 || res.Complete != res.Windows {
		t.Errorf("audit: %d of %d windows complete", res.Complete, res.Windows)
	}
	for _, want := range []string{"schema registry    https://", "audit dashboard    https://", "secured            files in " + filepath.Join(dir, SecureDir),
		"mirror target", "== audit report"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, u := range p.cfg.secureUsers() {
		fi, err := os.Stat(filepath.Join(dir, SecureDir, u+".password"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("password file of %s: %v, mode %v; want 0600", u, err, fi.Mode())
		}
	}
	// The tiers ran on their ACLs alone: the brokers refused nobody but
	// checkLeastPrivilege's probe.
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `msg="authorization failed"`) && !strings.Contains(line, "principal=User:loader operation=Write resource_type=Topic resource="+p.cfg.Topic) {
			t.Errorf("a tier was refused: %s", line)
		}
	}
	conf, err := os.ReadFile(filepath.Join(dir, "loader.properties"))
	if err != nil {
		t.Fatal(err)
	}
	if pw := p.secure.passwords["loader"]; strings.Contains(string(conf), pw) {
		t.Errorf("loader.properties holds the loader's password:\n%s", conf)
	}
}

// checkLeastPrivilege: the authorizer is on and the tiers hold only their
// ACLs: the loader may not write the page-view topic of analytics, and the
// audit service does not even see it in Metadata.
func checkLeastPrivilege(t *testing.T, ctx context.Context, p *Pipeline) {
	t.Helper()
	client := func(user string, opts ...kgo.Opt) *kgo.Client {
		cc, err := p.clientConfig(AnalyticsCluster, user)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := network.NewClient(cc, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	loader := client("loader", kgo.DisableIdempotentWrite(), kgo.RecordRetries(0))
	err := loader.ProduceSync(pctx, &kgo.Record{Topic: p.cfg.Topic, Value: []byte("not the loader's to write")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("the loader's produce to %s: %v; want TOPIC_AUTHORIZATION_FAILED", p.cfg.Topic, err)
	}
	md, err := kadm.NewClient(client("audit")).Metadata(pctx)
	if err != nil {
		t.Fatalf("the audit service's metadata: %v", err)
	}
	if _, ok := md.Topics[p.cfg.Topic]; ok {
		t.Errorf("the audit service's metadata lists %s; it holds no ACL on it", p.cfg.Topic)
	}
	if _, ok := md.Topics[audit.DefaultTopic]; !ok {
		t.Errorf("the audit service's metadata lacks %s: %v", audit.DefaultTopic, md.Topics.Names())
	}
}

// checkRefused: a client that does not authenticate gets nothing from a
// secured cluster or the registry, while the admin's credentials work.
func checkRefused(t *testing.T, ctx context.Context, p *Pipeline, dir string) {
	t.Helper()
	dc := p.cfg.Datacenters[0]
	bootstrap := p.Cluster(dc).Bootstrap()
	refused := func(what string, opts ...kgo.Opt) {
		t.Helper()
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap...), kgo.DialTimeout(5 * time.Second), kgo.RequestRetries(0)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := cl.Ping(pctx); err == nil {
			t.Errorf("%s: a ping of %s succeeded; want refused", what, dc)
		}
	}
	refused("PLAINTEXT client")
	trust, err := security.TLS{TruststoreLocation: filepath.Join(dir, SecureDir, "ca.pem")}.ClientConfig("")
	if err != nil {
		t.Fatal(err)
	}
	refused("TLS client without credentials", kgo.DialTLSConfig(trust))

	cc, err := p.clientConfig(dc, UserAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if cc.SASL.Username == UserAdmin {
		wrong := cc
		wrong.SASL.Password += "x"
		refused("admin with a wrong password", wrong.Opts()...)
	} else {
		t.Errorf("the admin connects without SASL (%s): the clients' listener is not SASL_SSL", cc.EffectiveProtocol())
	}
	cl, err := network.NewClient(cc)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		t.Errorf("the admin's ping of %s: %v", dc, err)
	}

	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: trust}}
	get := func(user string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.RegistryURL()+"/subjects", nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, p.secure.passwords[user])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Errorf("registry GET as %q: %v", user, err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(""); code != http.StatusUnauthorized {
		t.Errorf("registry GET without credentials: %d, want 401", code)
	}
	if code := get(UserAdmin); code != http.StatusOK {
		t.Errorf("registry GET as admin: %d, want 200", code)
	}
}
