package console_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserHeldByProbation: in Chromium, after a real probation (a
// receiver on 127.0.0.1 that fails 10 deliveries in a row), the
// subscription's page shows its endpoint's state beside its own with a
// link; the subscription's deliveries, the deliveries list and a
// delivery's page show each pending delivery held by the endpoint's
// probation, with the time it can really go (the API's next_attempt_at,
// the probe's), the full time on hover; the overview names the endpoint
// and counts the deliveries it holds.
func TestBrowserHeldByProbation(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	rc := newReceiver(t)
	sub := n.subscribe(adminKey, "puller", rc.URL+"/down")
	for i := range 11 {
		n.publish(adminKey, "evt-down-"+strconv.Itoa(i))
	}
	ep := n.must(http.StatusOK, adminKey, "GET", "/v1/subscriptions/"+sub, nil)["endpoint_id"].(string)
	eventually(t, "the endpoint in probation", func() bool {
		return n.must(http.StatusOK, adminKey, "GET", "/v1/endpoints/"+ep, nil)["state"] == "probation"
	})
	one := n.heldDelivery(sub)
	next, err := time.Parse(time.RFC3339, one["next_attempt_at"].(string))
	if err != nil || !next.After(n.clk.Now()) {
		t.Fatalf("the API's next_attempt_at %v is not after now (%s)", one["next_attempt_at"], n.clk.Now())
	}
	compact, full := next.Format("Jan 2 15:04:05"), next.Format("2006-01-02 15:04:05.000 UTC")

	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/"))
	b.signIn(t, adminKey)
	b.text(t, "#subscriptions")
	b.do(t, "opening the subscription", chromedp.Navigate(n.url+"/console/subscriptions/"+sub))
	if badge := b.text(t, "#endpoint-state-badge"); badge != "endpoint probation" {
		t.Fatalf("the subscription's heading shows %q beside its state; want endpoint probation", badge)
	}
	if ds := b.text(t, "#deliveries"); strings.Count(ds, "held by endpoint probation") != 11 || !strings.Contains(ds, compact) {
		t.Fatalf("the subscription's deliveries show %q; want 11 held by endpoint probation until %s", ds, compact)
	}
	b.do(t, "opening the deliveries", chromedp.Navigate(n.url+"/console/deliveries"))
	if ds := b.text(t, "#deliveries"); strings.Count(ds, "held by endpoint probation") != 11 || !strings.Contains(ds, "puller") {
		t.Fatalf("the deliveries list shows %q; want 11 held by endpoint probation, of puller", ds)
	}
	b.do(t, "opening a delivery", chromedp.Navigate(n.url+"/console/deliveries/"+one["id"].(string)))
	if na := b.text(t, "#next-attempt"); !strings.Contains(na, "held by endpoint probation") || !strings.Contains(na, compact) {
		t.Fatalf("the delivery's next attempt shows %q; want held by endpoint probation, %s", na, compact)
	}
	if title := read(t, b, "reading the time's title", chromedp.Evaluate[string](`document.querySelector("#next-attempt time").title`)); title != full {
		t.Fatalf("the next attempt's full time is %q; want %q", title, full)
	}
	if st := b.text(t, "#endpoint-state"); st != "probation" {
		t.Fatalf("the delivery's endpoint shows %q; want probation", st)
	}
	b.do(t, "opening the overview", chromedp.Navigate(n.url+"/console/"))
	if c := b.text(t, "#circuits"); !strings.Contains(c, "probation") || !strings.Contains(c, rc.URL+"/down") {
		t.Fatalf("the overview's endpoints not enabled show %q", c)
	}
	if held := b.text(t, "#backlog-held"); held != "11 held by endpoint probation" {
		t.Fatalf("the backlog's held count is %q; want 11 held by endpoint probation", held)
	}
	titles := read(t, b, "reading the charts' titles", chromedp.Evaluate[string](
		`[...document.querySelectorAll("svg.chart")].map(c => { const f = c.previousElementSibling; return f && f.tagName == "FIGCAPTION" && f.offsetHeight > 0 ? f.textContent : "UNTITLED" }).join("|")`))
	if strings.Count(titles, "|") != 5 || strings.Contains(titles, "UNTITLED") {
		t.Fatalf("the overview's charts' titles: %q; want six, each shown", titles)
	}
	b.do(t, "following the endpoint's link", chromedp.Click(chromedp.CSS(`#circuits a[href="/console/endpoints/`+ep+`"]`)), chromedp.WaitVisible(chromedp.CSS("#rate-limit-form")))
	b.do(t, "opening the endpoints", chromedp.Navigate(n.url+"/console/endpoints"))
	if intro := b.text(t, "#circuit-intro"); !strings.Contains(intro, "After 10 consecutive failures an endpoint goes to probation") ||
		!strings.Contains(intro, "At 2000 consecutive failures") || strings.Index(intro, "probation") > strings.Index(intro, "disabled") {
		t.Fatalf("the endpoints page's intro says %q; want probation at 10 failures, then disabled", intro)
	}
	b.noPolicyViolations(t)
}

// heldDelivery returns, through the API, one pending delivery of sub that
// its endpoint's probation holds, failing the test unless every pending
// one is held so.
func (n *node) heldDelivery(sub string) map[string]any {
	n.t.Helper()
	ds := n.must(http.StatusOK, adminKey, "GET", "/v1/deliveries?subscription_id="+sub, nil)["data"].([]any)
	for _, d := range ds {
		if d := d.(map[string]any); d["status"] != "pending" || d["held_by"] != "endpoint_probation" {
			n.t.Fatalf("a delivery of %s through the API: %v; want pending, held by endpoint_probation", sub, d)
		}
	}
	return ds[0].(map[string]any)
}
