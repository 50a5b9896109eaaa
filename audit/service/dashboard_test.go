package service

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/testenv"
)

// knownService is a Service (not consuming) whose store holds a known data
// set: topic clicks over three closed windows, producer 1000/2000/3000,
// tier reader complete, tier lossy 17 short in dc1's share of the middle
// window; topic views one window, complete.
func knownService(t *testing.T) (*Service, time.Time) {
	t.Helper()
	s, err := New(Config{Clusters: []Cluster{{Name: "dc1", Brokers: []string{"127.0.0.1:1"}}}, Dir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.ln.Close(); s.store.Close() })
	t0 := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	var events []audit.Event
	add := func(tier, cluster, topic string, w int, n int64) {
		events = append(events, audit.Event{ID: fmt.Sprintf("%s/%s/%s/%d", tier, cluster, topic, w), Tier: tier,
			Cluster: cluster, Instance: tier + "@" + cluster, Topic: topic,
			WindowStart: t0.Add(time.Duration(w) * 10 * time.Minute), Window: 10 * time.Minute, Count: n, Bytes: 10 * n})
	}
	for w, n := range []int64{1000, 2000, 3000} {
		add("producer", "dc1", "clicks", w, n*6/10)
		add("producer", "dc2", "clicks", w, n*4/10)
		add("reader", "dc1", "clicks", w, n*6/10)
		add("reader", "dc2", "clicks", w, n*4/10)
		lossy := n * 6 / 10
		if w == 1 {
			lossy -= 17
		}
		add("lossy", "dc1", "clicks", w, lossy)
		add("lossy", "dc2", "clicks", w, n*4/10)
	}
	add("producer", "dc1", "views", 0, 500)
	add("reader", "dc1", "views", 0, 500)
	if _, err := s.store.Apply(events, nil, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	return s, t0
}

// TestDashboardInChromium loads the dashboard in headless Chromium and
// checks that the chart and table of a known data set are rendered with
// its numbers, the incomplete window stands out, and a click on it shows
// its per-cluster, per-instance breakdown.
func TestDashboardInChromium(t *testing.T) {
	bin := testenv.Chromium(t)
	s, t0 := knownService(t)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	// The first Run's context lives as long as the browser: bound the
	// whole test, not one action.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()

	mid := t0.Add(10 * time.Minute).Format(time.RFC3339)
	if err := chromedp.Do(bctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-loaded="true"]`)),
	); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	type page struct {
		Points, IncompletePoints, Bands, Lines, ViewsPoints int
		BadWindow, BadTier, Summary                         string
		Rows                                                []string
	}
	got, err := chromedp.Run(bctx, chromedp.Evaluate[page](`(() => {
		const q = s => document.querySelectorAll(s);
		const bad = document.querySelector('#topic-clicks circle.point.incomplete');
		return {
			Points: q('#topic-clicks svg circle.point').length,
			IncompletePoints: q('#topic-clicks svg circle.point.incomplete').length,
			Bands: q('#topic-clicks svg rect.incomplete-band').length,
			Lines: q('#topic-clicks svg polyline.line').length,
			ViewsPoints: q('#topic-views svg circle.point').length,
			BadWindow: bad ? bad.getAttribute('data-window') : '',
			BadTier: bad ? bad.getAttribute('data-tier') : '',
			Summary: document.getElementById('summary').innerText,
			Rows: [...q('#topic-clicks table.windows tr.window')].map(r => r.className + '|' + r.innerText.replace(/\s+/g, ' ').trim()),
		};
	})()`))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if got.Points != 6 || got.IncompletePoints != 1 || got.Bands != 1 || got.Lines != 2 || got.ViewsPoints != 1 {
		t.Fatalf("chart: %+v; want 6 points, 1 incomplete, 1 band, 2 lines, views 1 point", got)
	}
	if got.BadWindow != mid || got.BadTier != "lossy" {
		t.Fatalf("incomplete point at %s tier %s, want %s lossy", got.BadWindow, got.BadTier, mid)
	}
	// Newest first: windows 3, 2, 1 (tiers lossy, reader).
	want := []string{
		"window complete|2025-06-01 10:20:00Z 3000 3000 100.000% 3000 100.000% 0 0 complete",
		"window incomplete|2025-06-01 10:10:00Z 2000 1983 99.150% 2000 100.000% 17 0 incomplete",
		"window complete|2025-06-01 10:00:00Z 1000 1000 100.000% 1000 100.000% 0 0 complete",
	}
	if strings.Join(got.Rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("table rows\n got %q\nwant %q", got.Rows, want)
	}
	if !strings.Contains(got.Summary, "2 topic(s), 4 closed window(s), 1 incomplete") {
		t.Fatalf("summary %q", got.Summary)
	}

	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(`#topic-clicks circle.point.incomplete`)),
		chromedp.WaitVisible(chromedp.CSS(`#breakdown table.instances`)),
	); err != nil {
		t.Fatalf("chromium click: %v", err)
	}
	type breakdown struct {
		Heading, Tiers string
		Instances      []string
	}
	b, err := chromedp.Run(bctx, chromedp.Evaluate[breakdown](`({
		Heading: document.querySelector('#breakdown h3').innerText,
		Tiers: document.querySelector('#breakdown .tiers').innerText,
		Instances: [...document.querySelectorAll('#breakdown tr.instance')].map(r => r.innerText.replace(/\s+/g, ' ').trim()),
	})`))
	if err != nil {
		t.Fatalf("chromium breakdown: %v", err)
	}
	if !strings.Contains(b.Heading, "clicks · 2025-06-01 10:10:00Z") || !strings.Contains(b.Heading, "incomplete") {
		t.Fatalf("breakdown heading %q", b.Heading)
	}
	if !strings.Contains(b.Tiers, "lossy: 1983 of 2000 (99.150%), 17 missing") {
		t.Fatalf("breakdown tiers %q", b.Tiers)
	}
	wantInst := []string{
		"lossy dc1 lossy@dc1 1183 11830 0",
		"lossy dc2 lossy@dc2 800 8000 0",
		"producer dc1 producer@dc1 1200 12000 0",
		"producer dc2 producer@dc2 800 8000 0",
		"reader dc1 reader@dc1 1200 12000 0",
		"reader dc2 reader@dc2 800 8000 0",
	}
	if strings.Join(b.Instances, "\n") != strings.Join(wantInst, "\n") {
		t.Fatalf("breakdown instances\n got %q\nwant %q", b.Instances, wantInst)
	}
}
