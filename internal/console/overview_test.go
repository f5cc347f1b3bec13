package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/herald-events/herald/internal/delivery"
)

// deliverTwoAndKillTwo subscribes ok (to rc's /ok) and dead (to rc's
// /dead, which answers 400), publishes two events to both, and waits until
// ok's are delivered and dead's dead-lettered.
func deliverTwoAndKillTwo(n *node, rc *receiver) {
	n.t.Helper()
	ok := n.subscribe(adminKey, "ok", rc.URL+"/ok")
	dead := n.subscribe(adminKey, "dead", rc.URL+"/dead")
	n.deadLetters(adminKey, dead, "evt-1", "evt-2")
	eventually(n.t, "ok's two delivered", func() bool {
		ds := n.deliveriesOf(ok)
		return len(ds) == 2 && ds[0].Status == delivery.StatusDelivered && ds[1].Status == delivery.StatusDelivered
	})
}

// TestOverview: /console/ is the overview: for the admin, the last hour's
// and day's totals and charts (inline SVG) of the deliveries (per
// second), and the backlog; for an account key of another account, its
// own empty charts and no backlog.
func TestOverview(t *testing.T) {
	n := setup(t)
	deliverTwoAndKillTwo(n, newReceiver(t))
	p := n.get("/console/", n.signIn(adminKey))
	if p.status != http.StatusOK {
		t.Fatalf("the overview: %d\n%s", p.status, p.body)
	}
	for _, want := range []string{`<svg id="deliveries-1h"`, `<svg id="success-24h"`, `<svg id="latency-1h"`, `id="backlog"`,
		"2 delivered · 2 failed attempts · 2 dead-lettered",
		// Deliveries per second: 2 in a minute is 0.033/s (the axis: 0.05).
		"<title>Deliveries per second (mean over each minute)</title>", ">0.05 /s</text>",
		// The success rate's axis goes to 100 % (here: 50 %, 2 of 4).
		">100 %</text>"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the admin's overview lacks %q", want)
		}
	}
	_, _, key := n.tenant("other", "account")
	p = n.get("/console/", n.signIn(key))
	if !strings.Contains(p.body, "0 delivered · 0 failed attempts · 0 dead-lettered") || strings.Contains(p.body, `id="backlog"`) {
		t.Errorf("another account's overview shows others' counts or the backlog:\n%s", p.body)
	}
}

// TestOverviewBacklog: the admin's overview counts the queued deliveries
// exactly up to the cap (10,000) and shows "over 10000" past it.
func TestOverviewBacklog(t *testing.T) {
	n := setup(t)
	n.pullSubscription(adminKey)
	publishMany(n, adminKey, "few", 3)
	cookie := n.signIn(adminKey)
	want := `<strong id="backlog-pending">0</strong> pending (<span id="backlog-retrying">0</span> of them waiting to retry), <strong id="backlog-queued">3</strong> queued`
	if p := n.get("/console/", cookie); !strings.Contains(p.body, want) {
		t.Fatalf("the overview lacks %q:\n%s", want, p.body)
	}
	publishMany(n, adminKey, "many", 9_998) // 10,001 queued
	want = `<strong id="backlog-queued">over 10000</strong> queued`
	if p := n.get("/console/", cookie); !strings.Contains(p.body, want) {
		t.Fatalf("the overview lacks %q:\n%s", want, p.body)
	}
}

// TestOverviewHeldCounts: the admin's backlog line counts, exactly past
// the 1,000 newest pending deliveries and up to the cap (10,000), the
// pending deliveries every account's frozen endpoints hold, and shows
// "over 10000" past it.
func TestOverviewHeldCounts(t *testing.T) {
	n := setup(t)
	rc := newReceiver(t)
	_, _, shop := n.tenant("shop", "account")
	_, _, rival := n.tenant("rival", "account")
	n.subscribe(shop, "orders", rc.URL+"/shop")
	n.subscribe(rival, "orders", rc.URL+"/rival")
	for _, key := range []string{shop, rival} {
		n.must(http.StatusOK, key, "POST", "/v1/endpoints/"+endpointOf(n, key)["id"].(string)+"/freeze", nil)
	}
	publishMany(n, shop, "shop", 1_499)
	publishMany(n, rival, "rival", 2)
	cookie := n.signIn(adminKey)
	want := `<span id="backlog-held" class="held">1501 held by endpoint frozen</span>`
	if p := n.get("/console/", cookie); !strings.Contains(p.body, want) {
		t.Fatalf("the overview lacks %q:\n%s", want, p.body)
	}
	publishMany(n, shop, "more", 8_500) // 10,001 held
	want = `<span id="backlog-held" class="held">over 10000 held by endpoint frozen</span>`
	if p := n.get("/console/", cookie); !strings.Contains(p.body, want) {
		t.Fatalf("the overview lacks %q:\n%s", want, p.body)
	}
}

// publishMany publishes n events with IDs prefix-0…, 1,000 a request.
func publishMany(nd *node, key, prefix string, n int) {
	nd.t.Helper()
	for from := 0; from < n; from += 1000 {
		var batch []map[string]any
		for i := from; i < min(n, from+1000); i++ {
			batch = append(batch, map[string]any{"specversion": "1.0", "id": fmt.Sprintf("%s-%d", prefix, i), "source": "/shop", "type": "order.paid"})
		}
		nd.must(http.StatusAccepted, key, "POST", "/v1/events", batch)
	}
}

// TestBrowserOverview: in Chromium, after deliveries, the overview draws
// its charts: lines of the deliveries per second, a point of latency.
func TestBrowserOverview(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	deliverTwoAndKillTwo(n, newReceiver(t))
	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/"))
	b.signIn(t, adminKey)
	b.do(t, "opening the overview", chromedp.Click(chromedp.CSS(`nav a[href="/console/"]`)),
		chromedp.WaitVisible(chromedp.CSS("#deliveries-1h polyline")), chromedp.WaitVisible(chromedp.CSS("#latency-1h circle")))
	if totals := b.text(t, "#totals-1h"); !strings.HasPrefix(totals, "2 delivered") {
		t.Fatalf("the last hour's totals read %q", totals)
	}
	svg := read(t, b, "reading the chart", chromedp.OuterHTML(chromedp.CSS("#deliveries-1h")))
	if strings.Count(svg, "<polyline") != 3 {
		t.Fatalf("the deliveries chart has %d lines, want 3:\n%s", strings.Count(svg, "<polyline"), svg)
	}
	b.shot(t, "overview")
	b.noPolicyViolations(t)
}
