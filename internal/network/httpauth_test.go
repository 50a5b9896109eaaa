package network_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/network/securetest"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/security"
)

func loadSecurity(t *testing.T, props map[string]string) *network.HTTPSecurity {
	t.Helper()
	p := properties.New(props)
	c := network.HTTPConfigFromProperties(p, "")
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	if u := p.Unknown(); len(u) > 0 {
		t.Fatalf("keys not read: %v", u)
	}
	s, err := c.Load()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// needByMethod: GET reads, POST writes, the rest is admin's.
func needByMethod(r *http.Request) network.Permission {
	switch r.Method {
	case http.MethodGet:
		if r.URL.Path == "/healthz" {
			return network.Anonymous
		}
		return network.Read
	case http.MethodPost:
		return network.Write
	}
	return network.Admin
}

func startSecure(t *testing.T, props map[string]string) string {
	t.Helper()
	sec := loadSecurity(t, props)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	s, err := network.StartSecureHTTP(context.Background(), "127.0.0.1:0", ok, sec, needByMethod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return sec.Scheme() + "://" + s.Addr()
}

type result struct {
	status int
	body   string
	auth   string
}

func call(t *testing.T, c *http.Client, method, url string) result {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{resp.StatusCode, string(b), resp.Header.Get("WWW-Authenticate")}
}

func TestBasicAuthRolesOverTLS(t *testing.T) {
	f := securetest.New(t)
	base := startSecure(t, f.Props(""))
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("base %s: want https", base)
	}
	anon := call(t, f.HTTPClient("", false), "GET", base+"/x")
	if anon.status != 401 || anon.auth != `Basic realm="SchemaRegistry-Props", charset="UTF-8"` {
		t.Errorf("anonymous: %d, WWW-Authenticate %q", anon.status, anon.auth)
	}
	var body struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(anon.body), &body); err != nil || body.Code != 40101 || body.Message == "" {
		t.Errorf("401 body %q: want {error_code:40101, message}", anon.body)
	}
	if r := call(t, f.HTTPClient("", false), "GET", base+"/healthz"); r.status != 200 {
		t.Errorf("anonymous /healthz: %d", r.status)
	}
	// Wrong password for each kind of stored password.
	for _, u := range []string{"admin", "writer", "reader"} {
		c := f.HTTPClient("", false)
		req, _ := http.NewRequest("GET", base+"/x", nil)
		req.SetBasicAuth(u, "wrong")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("%s with a wrong password: %d, want 401", u, resp.StatusCode)
		}
	}
	want := map[string]map[string]int{
		"admin":  {"GET": 200, "POST": 200, "DELETE": 200},
		"writer": {"GET": 200, "POST": 200, "DELETE": 403},
		"reader": {"GET": 200, "POST": 403, "DELETE": 403},
		"viewer": {"GET": 200, "POST": 403, "DELETE": 403},
		"nobody": {"GET": 403, "POST": 403, "DELETE": 403}, // no allowed role
	}
	for _, u := range securetest.Users {
		c := f.HTTPClient(u, false)
		for _, m := range []string{"GET", "POST", "DELETE"} {
			r := call(t, c, m, base+"/x")
			if r.status != want[u][m] {
				t.Errorf("%s %s: %d, want %d (%s)", u, m, r.status, want[u][m], r.body)
			}
			if r.status == 403 {
				if err := json.Unmarshal([]byte(r.body), &body); err != nil || body.Code != 40301 {
					t.Errorf("403 body %q: want error_code 40301", r.body)
				}
			}
		}
	}
}

func TestHTTPSKeystoresAndClientAuth(t *testing.T) {
	f := securetest.New(t)
	p12 := map[string]string{
		"ssl.keystore.location": f.ServerPKCS12, "ssl.keystore.type": "PKCS12",
		"ssl.keystore.password": securetest.StorePassword, "ssl.key.password": securetest.StorePassword,
		"ssl.truststore.location": f.CAPKCS12, "ssl.truststore.type": "PKCS12",
		"ssl.truststore.password":   securetest.StorePassword,
		"ssl.client.authentication": "REQUIRED",
	}
	base := startSecure(t, p12)
	if _, err := f.HTTPClient("", false).Get(base + "/x"); err == nil {
		t.Error("a client without a certificate was served under ssl.client.authentication=REQUIRED")
	}
	if r := call(t, f.HTTPClient("", true), "GET", base+"/x"); r.status != 200 {
		t.Errorf("with a client certificate: %d", r.status)
	}
	// Anonymous without authentication.method; an untrusting client fails.
	if _, err := http.Get(base + "/x"); err == nil {
		t.Error("a client not trusting the CA was served")
	}

	requested := map[string]string{
		"ssl.keystore.location": f.ServerPEM, "ssl.truststore.location": f.CAPEM,
		"ssl.client.authentication": "requested",
	}
	base = startSecure(t, requested)
	for _, cert := range []bool{false, true} {
		if r := call(t, f.HTTPClient("", cert), "GET", base+"/x"); r.status != 200 {
			t.Errorf("REQUESTED, certificate %v: %d", cert, r.status)
		}
	}
}

func TestHTTPConfigRefusals(t *testing.T) {
	f := securetest.New(t)
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"ssl.client.authentication": "MAYBE"}, "ssl.client.authentication"},
		{map[string]string{"authentication.method": "DIGEST"}, "authentication.method"},
		{map[string]string{"authorization.roles.x": "root"}, "authorization.roles.x"},
	} {
		p := properties.New(tc.props)
		network.HTTPConfigFromProperties(p, "")
		if err := p.Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want one naming %s", tc.props, err, tc.want)
		}
	}
	for _, tc := range []struct {
		c    network.HTTPConfig
		want string
	}{
		{network.HTTPConfig{TLS: true}, "ssl.keystore.location"},
		{network.HTTPConfig{ClientAuth: network.ClientAuthRequired}, "needs HTTPS"},
		{network.HTTPConfig{Auth: network.AuthConfig{Method: "BASIC"}}, "authentication.users.file"},
		{network.HTTPConfig{TLS: true, SSL: security.TLS{KeystoreLocation: f.ServerPEM}, ClientAuth: network.ClientAuthRequired}, "ssl.truststore.location"},
	} {
		if _, err := tc.c.Load(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want one naming %s", tc.c, err, tc.want)
		}
	}
}

func TestParseUsers(t *testing.T) {
	u, err := network.ParseUsers([]byte("a: secret, r1 ,r2\nb=MD5:5ebe2294ecd0e0f08eab7690d2a6ee69\nc: $2y$04$abcdefghijklmnopqrstuu5Jf5CQb1uQ3dWkV2q5kFvBvQz0y5Yxe\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(u["a"].Roles, []string{"r1", "r2"}) || len(u["b"].Roles) != 0 {
		t.Errorf("roles: a %v, b %v", u["a"].Roles, u["b"].Roles)
	}
	for _, tc := range []struct{ file, want string }{
		{"old: CRYPT:abc123xyz,admin", `user "old": CRYPT:`},
		{"ob: OBF:1v2j1uum1xtv1zej1zer1xtn1uvk1v1v", `user "ob": OBF:`},
		{"m: MD5:nothex", `user "m": MD5:`},
		{"e: ,admin", `user "e": empty password`},
		{"bc: $2y$99$abc", `user "bc": bad bcrypt`},
	} {
		_, err := network.ParseUsers([]byte(tc.file))
		if err == nil || !errors.Is(err, network.ErrBadAuth) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want ErrBadAuth naming %s", tc.file, err, tc.want)
		}
	}
}

func TestMetricsSecurityAndPprof(t *testing.T) {
	f := securetest.New(t)
	p := properties.New(f.Props("metrics."))
	mc := network.MetricsConfigFromProperties(p, "")
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := network.ServeMetricsWith(context.Background(), "127.0.0.1:0", reg, mc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := "https://" + s.Addr()
	for _, tc := range []struct {
		user, path string
		want       int
	}{
		{"", "/metrics", 401}, {"viewer", "/metrics", 200}, {"viewer", "/debug/pprof/", 403},
		{"admin", "/debug/pprof/", 200},
	} {
		if r := call(t, f.HTTPClient(tc.user, false), "GET", base+tc.path); r.status != tc.want {
			t.Errorf("%q %s: %d, want %d", tc.user, tc.path, r.status, tc.want)
		}
	}
	on, off := true, false
	for _, tc := range []struct {
		addr  string
		pprof *bool
		want  bool
	}{
		{"127.0.0.1:9", nil, true}, {"[::1]:9", nil, true}, {"localhost:9", nil, true},
		{":9", nil, false}, {"0.0.0.0:9", nil, false}, {"10.1.2.3:9", nil, false},
		{"0.0.0.0:9", &on, true}, {"127.0.0.1:9", &off, false},
	} {
		if got := (network.MetricsConfig{Pprof: tc.pprof}).PprofOn(tc.addr); got != tc.want {
			t.Errorf("PprofOn(%s, %v) = %v", tc.addr, tc.pprof, got)
		}
	}
	p = properties.New(map[string]string{"metrics.pprof.enable": "false"})
	s2, err := network.ServeMetricsWith(context.Background(), "127.0.0.1:0", reg, network.MetricsConfigFromProperties(p, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if r := call(t, http.DefaultClient, "GET", "http://"+s2.Addr()+"/debug/pprof/"); r.status != 404 {
		t.Errorf("metrics.pprof.enable=false: pprof answers %d", r.status)
	}
}

// TestBruteForceDoesNotStarveUsers runs 10,000 wrong passwords for a
// bcrypt user from 8 connections while that user, with the right password,
// keeps making requests: the median latency of the good requests during
// the attack must stay under twice the one before it. The good requests
// are verified from the cache of successful checks; the attack's bcrypt
// checks run at most MaxChecks at a time, leaving the other cores free.
func TestBruteForceDoesNotStarveUsers(t *testing.T) {
	if testing.Short() {
		t.Skip("brute force takes seconds")
	}
	f := securetest.New(t)
	props := f.Props("")
	delete(props, "ssl.keystore.location")
	delete(props, "ssl.keystore.type")
	base := startSecure(t, props)
	good := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, TLSClientConfig: &tls.Config{}}}
	sample := func(n int) time.Duration {
		var d []time.Duration
		for range n {
			req, _ := http.NewRequest("GET", base+"/x", nil)
			req.SetBasicAuth("reader", securetest.Password("reader"))
			start := time.Now()
			resp, err := good.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("good request: %d", resp.StatusCode)
			}
			d = append(d, time.Since(start))
		}
		slices.Sort(d)
		return d[len(d)/2]
	}
	sample(20) // warm the cache and the connection
	before := sample(400)

	const attempts, attackers = 10_000, 8
	var next, refused atomic.Int64
	var wg sync.WaitGroup
	attackStart := time.Now()
	for range attackers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			for next.Add(1) <= attempts {
				req, _ := http.NewRequest("GET", base+"/x", nil)
				req.SetBasicAuth("reader", "guess")
				resp, err := c.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 401 {
					refused.Add(1)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var during []time.Duration
	for {
		select {
		case <-done:
		default:
			during = append(during, sample(25))
			continue
		}
		break
	}
	attack := time.Since(attackStart)
	if refused.Load() != attempts {
		t.Fatalf("%d of %d wrong passwords refused", refused.Load(), attempts)
	}
	if len(during) < 4 {
		t.Fatalf("only %d sample rounds during the attack (%v)", len(during), attack)
	}
	slices.Sort(during)
	median := during[len(during)/2]
	ratio := float64(median) / float64(before)
	t.Logf("brute force: %d wrong passwords in %v (%.0f/s); good requests' median %v before, %v during (%.2fx, %d rounds)",
		attempts, attack.Round(time.Millisecond), attempts/attack.Seconds(), before, median, ratio, len(during))
	if ratio >= 2 {
		t.Errorf("good requests' median latency %v during the attack is %.2fx the %v before it; want < 2x", median, ratio, before)
	}
}
