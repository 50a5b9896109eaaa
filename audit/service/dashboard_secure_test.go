package service

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
	"time"

	cdpnetwork "github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/network/securetest"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestDashboardBehindBasicAuthOverTLS serves the dashboard as Run does,
// over HTTPS with basic authentication, and loads it in headless Chromium:
// without credentials the page is refused (401, nothing rendered); with a
// viewer's credentials the chart renders.
func TestDashboardBehindBasicAuthOverTLS(t *testing.T) {
	bin := testenv.Chromium(t)
	f := securetest.New(t)
	p := properties.New(f.Props(""))
	hc := network.HTTPConfigFromProperties(p, "")
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	sec, err := hc.Load()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := knownService(t)
	srv := network.ServeHTTP(s.ln, s.Handler(), sec, need)
	defer srv.Close()
	base := "https://" + srv.Addr()

	// Chromium trusts the test server's key alone, not every certificate.
	spki, err := x509.MarshalPKIXPublicKey(f.Server.Cert.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(spki)
	pin := chromedp.Flag("ignore-certificate-errors-spki-list", base64.StdEncoding.EncodeToString(sum[:]))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	type page struct {
		Loaded string
		Points int
		Text   string
	}
	read := `(() => ({
		Loaded: document.body ? (document.body.getAttribute('data-loaded') || '') : '',
		Points: document.querySelectorAll('#topic-clicks svg circle.point').length,
		Text: document.body ? document.body.innerText : '',
	}))()`

	// Headless Chromium cannot show the login prompt a 401 with
	// WWW-Authenticate asks for, so it fails the navigation instead (a
	// browser with a screen prompts); either way nothing renders.
	anon := newBrowser(t, ctx, bin, pin)
	if err := chromedp.Do(anon, chromedp.Navigate(base+"/")); err == nil {
		got, err := chromedp.Run(anon, chromedp.Evaluate[page](read))
		if err != nil {
			t.Fatal(err)
		}
		if got.Points != 0 || got.Loaded != "" || !strings.Contains(got.Text, "40101") {
			t.Fatalf("without credentials: %+v; want the 401 body and no chart", got)
		}
	} else if !strings.Contains(err.Error(), "ERR_INVALID_AUTH_CREDENTIALS") {
		t.Fatalf("chromium, no credentials: %v; want the navigation refused for its credentials", err)
	}

	// The viewer logs in: DevTools sends the Authorization header a login
	// prompt would, on the page and on every request its script makes.
	viewer := newBrowser(t, ctx, bin, pin)
	if err := chromedp.Do(viewer, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(viewer, cdpnetwork.Enable, cdpnetwork.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	login := base64.StdEncoding.EncodeToString([]byte("viewer:" + securetest.Password("viewer")))
	if _, err := chromedp.Call(viewer, cdpnetwork.SetExtraHTTPHeaders, cdpnetwork.SetExtraHTTPHeadersParams{
		Headers: cdpnetwork.Headers{"Authorization": "Basic " + login},
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(viewer,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-loaded="true"]`)),
	); err != nil {
		t.Fatalf("chromium, viewer: %v", err)
	}
	got, err := chromedp.Run(viewer, chromedp.Evaluate[page](read))
	if err != nil {
		t.Fatal(err)
	}
	if got.Points != 6 {
		t.Fatalf("after login: %+v; want the chart's 6 points", got)
	}

	// A user who opens https://viewer:PASSWORD@host/: the browser logs in
	// with the URL's credentials, and the page's own requests must work
	// too (fetch refuses a URL with credentials, as a relative URL resolved
	// against this page's would be) and be authenticated.
	inURL := newBrowser(t, ctx, bin, pin)
	u := url.URL{Scheme: "https", Host: srv.Addr(), Path: "/", User: url.UserPassword("viewer", securetest.Password("viewer"))}
	if err := chromedp.Do(inURL,
		chromedp.Navigate(u.String()),
		chromedp.WaitVisible(chromedp.CSS(`body[data-loaded="true"], #summary .error`)),
	); err != nil {
		t.Fatalf("chromium, credentials in the URL: %v", err)
	}
	got, err = chromedp.Run(inURL, chromedp.Evaluate[page](read))
	if err != nil {
		t.Fatal(err)
	}
	if got.Loaded != "true" || got.Points != 6 {
		t.Fatalf("credentials in the URL: %+v; want the chart's 6 points", got)
	}
}
