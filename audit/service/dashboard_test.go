package service

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// knownService is a Service (not consuming) whose store holds a known data
// set: topic clicks over three closed windows, producer 1000/2000/3000,
// tier reader complete, tier lossy 17 short in dc1's share of the middle
// window; topic views one window, complete.
func knownService(t *testing.T) (*Service, time.Time) {
	t.Helper()
	s := storeService(t, nil)
	t0 := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	ev := &windowEvents{t0: t0}
	add := ev.add
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
	if _, err := s.store.Apply(ev.events, nil, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	return s, t0
}

// storeService is a Service that does not consume (its one cluster has no
// broker) and does not run: the test fills its store. now is its clock
// (nil: time.Now).
func storeService(t *testing.T, now func() time.Time) *Service {
	t.Helper()
	s, err := New(Config{Clusters: []Cluster{{Name: "dc1", Brokers: []string{"127.0.0.1:1"}}}, Dir: t.TempDir(),
		Listen: "127.0.0.1:0", Grace: 2, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.ln.Close(); s.store.Close() })
	return s
}

// windowEvents builds audit events of 10-minute windows from t0: one per
// tier, cluster, topic and window index.
type windowEvents struct {
	t0     time.Time
	events []audit.Event
}

func (e *windowEvents) add(tier, cluster, topic string, w int, n int64) {
	e.events = append(e.events, audit.Event{ID: fmt.Sprintf("%s/%s/%s/%d", tier, cluster, topic, w), Tier: tier,
		Cluster: cluster, Instance: tier + "@" + cluster, Topic: topic,
		WindowStart: e.t0.Add(time.Duration(w) * 10 * time.Minute), Window: 10 * time.Minute, Count: n, Bytes: 10 * n})
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
	bctx := newBrowser(t, ctx, bin)

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

// newBrowser starts headless Chromium (closed when ctx ends or at cleanup)
// with extra flags.
func newBrowser(t *testing.T, ctx context.Context, bin string, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append([]chromedp.ExecAllocatorOption{
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
	}, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	return bctx
}

// TestDashboardOpenWindowAndTicks: the newest window of topic orders is
// still open and its loader has loaded nothing yet (0%). The chart's solid
// line must join the closed windows only (all at 100%), the open window is
// a hollow point at 0% on a dashed step from the last closed one, and the
// y-axis ticks are round: 0/25/50/75/100%, and up to 150% in 25% steps for
// topic dups whose loader counted 130% (duplicates).
func TestDashboardOpenWindowAndTicks(t *testing.T) {
	bin := testenv.Chromium(t)
	t0 := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	// Windows 0-3 were last updated at t0+40m: closed from t0+60m (Grace
	// 2 x 10m); window 4 was updated at t0+50m: open until t0+70m.
	now := t0.Add(62 * time.Minute)
	s := storeService(t, func() time.Time { return now })
	closed := &windowEvents{t0: t0}
	for w := range 4 {
		closed.add("producer", "dc1", "orders", w, 1000)
		closed.add("loader", "dc1", "orders", w, 1000)
	}
	closed.add("producer", "dc1", "dups", 0, 100)
	closed.add("loader", "dc1", "dups", 0, 130)
	if _, err := s.store.Apply(closed.events, nil, t0.Add(40*time.Minute)); err != nil {
		t.Fatal(err)
	}
	open := &windowEvents{t0: t0}
	open.add("producer", "dc1", "orders", 4, 800)
	if _, err := s.store.Apply(open.events, nil, t0.Add(50*time.Minute)); err != nil {
		t.Fatal(err)
	}
	reps, err := s.Windows("orders", time.Time{}, time.Time{})
	if err != nil || len(reps) != 5 || !reps[3].Closed || reps[3].Status != StatusComplete || reps[4].Closed || reps[4].Status != StatusOpen {
		t.Fatalf("data set: %+v, %v; want windows 0-3 closed and complete, 4 open", reps, err)
	}

	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bctx := newBrowser(t, ctx, bin)
	if err := chromedp.Do(bctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-loaded="true"]`)),
	); err != nil {
		t.Fatalf("chromium: %v", err)
	}

	type line struct {
		Windows string
		Dash    string
		Ys      []float64
	}
	type point struct {
		Window, Class string
		Cy            float64
	}
	type chart struct {
		Ticks      []string
		TickYs     []float64
		Solid      []line
		Dashed     []line
		OpenPoints []point
	}
	// The y-axis labels are the texts anchored at their end; a tick's
	// line is 4 px above its label's baseline.
	read := func(topic string) chart {
		t.Helper()
		got, err := chromedp.Run(bctx, chromedp.Evaluate[chart](fmt.Sprintf(`(() => {
			const svg = document.querySelector('#topic-%s svg');
			const ys = p => p.getAttribute('points').trim().split(/\s+/).map(xy => +xy.split(',')[1]);
			const line = p => ({ Windows: p.getAttribute('data-windows') || '', Dash: p.getAttribute('stroke-dasharray') || '', Ys: ys(p) });
			const labels = [...svg.querySelectorAll('text[text-anchor="end"]')];
			return {
				Ticks: labels.map(e => e.textContent),
				TickYs: labels.map(e => +e.getAttribute('y') - 4),
				Solid: [...svg.querySelectorAll('polyline.line:not(.open)')].map(line),
				Dashed: [...svg.querySelectorAll('polyline.line.open')].map(line),
				OpenPoints: [...svg.querySelectorAll('circle.point.open')].map(c => ({ Window: c.getAttribute('data-window'), Class: c.getAttribute('class'), Cy: +c.getAttribute('cy') })),
			};
		})()`, topic)))
		if err != nil {
			t.Fatalf("chromium: %v", err)
		}
		return got
	}
	win := func(ws ...int) string {
		var out []string
		for _, w := range ws {
			out = append(out, t0.Add(time.Duration(w)*10*time.Minute).Format(time.RFC3339))
		}
		return strings.Join(out, " ")
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 0.01 }
	all := func(ys []float64, want ...float64) bool {
		if len(ys) != len(want) {
			return false
		}
		for i := range ys {
			if !near(ys[i], want[i]) {
				return false
			}
		}
		return true
	}

	orders := read("orders")
	if strings.Join(orders.Ticks, " ") != "0% 25% 50% 75% 100%" {
		t.Fatalf("orders y-axis ticks %q, want 0%% 25%% 50%% 75%% 100%%", orders.Ticks)
	}
	y0, y100 := orders.TickYs[0], orders.TickYs[4]
	if len(orders.Solid) != 1 || orders.Solid[0].Windows != win(0, 1, 2, 3) || !all(orders.Solid[0].Ys, y100, y100, y100, y100) {
		t.Fatalf("solid line %+v; want closed windows %s, all at 100%% (y=%.1f)", orders.Solid, win(0, 1, 2, 3), y100)
	}
	if len(orders.Dashed) != 1 || orders.Dashed[0].Windows != win(3, 4) || orders.Dashed[0].Dash == "" || !all(orders.Dashed[0].Ys, y100, y0) {
		t.Fatalf("dashed line %+v; want a dashed step from %s (100%%) to the open %s (0%%, y=%.1f)", orders.Dashed, win(3), win(4), y0)
	}
	if len(orders.OpenPoints) != 1 || orders.OpenPoints[0].Window != win(4) || !near(orders.OpenPoints[0].Cy, y0) {
		t.Fatalf("open points %+v; want one, window %s at 0%%", orders.OpenPoints, win(4))
	}

	dups := read("dups")
	if strings.Join(dups.Ticks, " ") != "0% 25% 50% 75% 100% 125% 150%" {
		t.Fatalf("dups y-axis ticks %q, want 0%% to 150%% in 25%% steps", dups.Ticks)
	}
	if len(dups.Dashed) != 0 || len(dups.OpenPoints) != 0 {
		t.Fatalf("dups (all closed): dashed %+v, open points %+v; want none", dups.Dashed, dups.OpenPoints)
	}
}
