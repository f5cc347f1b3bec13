package console_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// fitScript lists what does not fit the window: the page scrolling
// sideways, a table scrolling inside its own box or reaching past its
// parent, the navigation wrapping onto a second line.
const fitScript = `(() => {
  const bad = [], d = document.documentElement;
  if (d.scrollWidth > d.clientWidth) bad.push("the page: " + d.scrollWidth + " > " + d.clientWidth);
  document.querySelectorAll("table").forEach((t, i) => {
    const name = "table " + (t.id || i);
    if (t.scrollWidth > t.clientWidth) bad.push(name + " scrolls: " + t.scrollWidth + " > " + t.clientWidth);
    if (t.getBoundingClientRect().right > t.parentElement.getBoundingClientRect().right + 1) bad.push(name + " passes its parent");
  });
  const tops = new Set([...document.querySelectorAll("header.top nav a")].map(a => a.offsetTop));
  if (tops.size > 1) bad.push("the navigation wraps onto " + tops.size + " lines");
  return bad.join("; ");
})()`

// longEventID is an event ID as long as real ones get.
func longEventID(i int) string {
	return "order-2026-01-05T09:00:00Z-7f3a9c1e-2b4d-4e8f-9a6b-3c5d7e9f1a2b-" + strconv.Itoa(i) + "-payment_captured"
}

// TestBrowserPagesFit: in Chromium at 1,280 px, with realistic data (25
// events with long IDs to four subscriptions, two of whose endpoints are
// in probation, one's dead-lettered, 30 accounts), no console or portal
// page scrolls sideways, no table scrolls inside its own box, and the
// navigation stays on one line.
func TestBrowserPagesFit(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	rc := newReceiver(t)
	acc, _, key := n.tenant("shop-with-a-rather-long-account-name", "account")
	for i := range 30 {
		n.must(http.StatusCreated, adminKey, "POST", "/v1/accounts", map[string]any{"name": "tenant-" + strconv.Itoa(i)})
	}
	down := n.subscribe(key, "payments-captured-to-the-ledger-service", rc.URL+"/down/"+strings.Repeat("segment/", 12)+"hook?token=abcdefghijklmnopqrstuvwxyz0123456789")
	dead := n.subscribe(key, "invoices", rc.URL+"/dead")
	ok := n.subscribe(key, "orders", rc.URL+"/ok")
	n.subscribe(key, "flaky", rc.URL+"/flaky")
	ids := make([]string, 25)
	for i := range ids {
		ids[i] = longEventID(i)
		n.publish(key, ids[i])
	}
	eventually(t, "the dead letters", func() bool {
		// 400s dead-letter at once; after 10 the endpoint's probation
		// holds the others.
		return len(n.must(http.StatusOK, key, "GET", "/v1/dead-letters?subscription_id="+dead, nil)["data"].([]any)) >= 10
	})
	ep := n.must(http.StatusOK, key, "GET", "/v1/subscriptions/"+down, nil)["endpoint_id"].(string)
	eventually(t, "the endpoint in probation", func() bool {
		return n.must(http.StatusOK, key, "GET", "/v1/endpoints/"+ep, nil)["state"] == "probation"
	})
	one := n.deliveriesOf(down)[0].ID
	job := n.must(http.StatusAccepted, key, "POST", "/v1/subscriptions/"+dead+"/recover", map[string]any{"since": "2026-01-05T08:00:00Z"})["id"].(string)
	link := portalLink(n, key, map[string]any{"ttl": "30m"})

	b.do(t, "sizing the window", chromedp.EmulateViewport(1280, 800))
	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/login"))
	b.signIn(t, adminKey)
	b.text(t, "#subscriptions")
	for _, path := range []string{"/console/", "/console/?account_id=" + acc, "/console/subscriptions", "/console/subscriptions?account_id=" + acc,
		"/console/subscriptions/" + down, "/console/subscriptions/" + dead, "/console/subscriptions/" + ok, "/console/subscriptions/new",
		"/console/subscriptions/" + down + "/edit", "/console/subscriptions/" + down + "/filter-test", "/console/subscriptions/" + down + "/delete",
		"/console/deliveries", "/console/deliveries?status=dead_lettered", "/console/deliveries/" + one, "/console/dead-letters",
		"/console/endpoints", "/console/endpoints/" + ep, "/console/events?id=" + ids[3], "/console/jobs/" + job,
		"/console/accounts", "/console/accounts/" + acc} {
		b.fits(t, n.url+path)
	}
	b.do(t, "opening the portal", chromedp.Navigate(n.url+link), chromedp.WaitVisible(chromedp.CSS("#subscriptions")))
	b.do(t, "opening a held subscription in the portal", chromedp.Navigate(n.url+"/portal/subscriptions/"+down))
	if ds := b.text(t, "#deliveries"); !strings.Contains(ds, "held by endpoint probation") || b.text(t, "#endpoint-state-badge") != "endpoint probation" {
		t.Fatalf("the portal's subscription in probation shows %q; want its deliveries held by endpoint probation", ds)
	}
	for _, path := range []string{"/portal/subscriptions", "/portal/subscriptions/" + down, "/portal/subscriptions/" + dead,
		"/portal/deliveries/" + one} {
		b.fits(t, n.url+path)
	}
}

// fits opens url and fails the test unless it fits the window (fitScript).
func (b *browser) fits(t *testing.T, url string) {
	t.Helper()
	b.do(t, "opening "+url, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("main")))
	if bad := read(t, b, "measuring "+url, chromedp.Evaluate[string](fitScript)); bad != "" {
		t.Errorf("%s does not fit 1280 px: %s", url, bad)
	}
}
