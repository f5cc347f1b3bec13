package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserForgedCSRFRefused: in Chromium, a console form whose CSRF
// token was altered in the page is refused with the 403 page saying so,
// and the change it asked for is not made (no test event is published).
func TestBrowserForgedCSRFRefused(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	rc := newReceiver(t)
	sub := n.subscribe(adminKey, "orders", rc.URL+"/ok")
	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/login"))
	b.signIn(t, adminKey)
	b.text(t, "#subscriptions")
	b.do(t, "opening the subscription", chromedp.Navigate(n.url+"/console/subscriptions/"+sub),
		chromedp.WaitVisible(chromedp.CSS("#send-test")))
	b.do(t, "forging the token and sending a test event",
		chromedp.SetValue(chromedp.CSS(`form:has(#send-test) input[name=csrf]`), "forged"),
		chromedp.Click(chromedp.CSS("#send-test")), chromedp.WaitNotPresent(chromedp.CSS("#send-test")),
		chromedp.WaitVisible(chromedp.CSS("#message")))
	if h := b.text(t, "h1"); h != "403 Forbidden" {
		t.Fatalf("a forged token's answer has the heading %q; want 403 Forbidden", h)
	}
	if msg := b.text(t, "#message"); !strings.Contains(msg, "CSRF token") || !strings.Contains(msg, "nothing was changed") {
		t.Fatalf("the 403 page says %q", msg)
	}
	if ds := n.deliveriesOf(sub); len(ds) != 0 {
		t.Fatalf("a forged form published a test event: %d deliveries", len(ds))
	}
}

// TestBrowserPortalStaysInItsAccount: in Chromium, a portal session opens
// no operator page (the console asks to sign in) and no API route, and its
// one-time link does not open a second time.
func TestBrowserPortalStaysInItsAccount(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	ts := makeTenants(n)
	link := portalLink(n, ts.shopKey, map[string]any{"ttl": "30m"})
	b.do(t, "opening the link", chromedp.Navigate(n.url+link))
	b.text(t, "#subscriptions")
	b.do(t, "opening the console's subscriptions", chromedp.Navigate(n.url+"/console/subscriptions"),
		chromedp.WaitVisible(chromedp.CSS("#key")))
	page := read(t, b, "reading the page", chromedp.OuterHTML(chromedp.CSS("html")))
	if strings.Contains(page, rivalName) {
		t.Fatalf("the console's page, opened with a portal session, shows another account:\n%s", page)
	}
	b.do(t, "opening an API route", chromedp.Navigate(n.url+"/v1/subscriptions"))
	if body := b.text(t, "body"); !strings.Contains(body, `"status":401`) && !strings.Contains(body, `"status": 401`) {
		t.Fatalf("the API, opened with a portal session, answered %q; want 401", body)
	}
	b.do(t, "opening the link again", chromedp.Navigate(n.url+link))
	if h := b.text(t, "h1"); !strings.HasPrefix(h, "410") {
		t.Fatalf("the link opened twice answers %q; want 410", h)
	}
}
