package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/herald-events/herald/internal/delivery"
)

// TestBrowserPortal: in Chromium, a portal link made through the API
// opens the account's portal, which shows its subscription without the
// console's navigation; its URL is edited from the page, its secret shown
// and rotated (the new one shown, the old one as previous), and a test
// event sent from it is delivered to the new URL (a receiver on
// 127.0.0.1) and shown delivered in its deliveries. The link opens once.
func TestBrowserPortal(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	rc := newReceiver(t)
	ts := twoTenants(n)
	sub := n.subscribe(ts.shopKey, "orders", rc.URL+"/old")
	link := portalLink(n, ts.shopKey, map[string]any{"subscription_ids": []string{sub}, "ttl": "30m"})

	b.do(t, "opening the link", chromedp.Navigate(n.url+link))
	if list := b.text(t, "#subscriptions"); !strings.Contains(list, "orders") || !strings.Contains(list, rc.URL+"/old") {
		t.Fatalf("the portal's list shows %q; want orders", list)
	}
	if nav := b.text(t, "header.top"); strings.Contains(nav, "Deliveries") || strings.Contains(nav, "Sign out") {
		t.Fatalf("the portal's header shows the console's navigation: %q", nav)
	}
	b.do(t, "opening the subscription", chromedp.Click(chromedp.CSS(`a[href="/portal/subscriptions/`+sub+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("#edit")))
	b.do(t, "editing its URL", chromedp.SetValue(chromedp.CSS("#url"), rc.URL+"/new"), chromedp.Click(chromedp.CSS("#save")))
	if msg := b.text(t, "#message"); msg != "Saved." || !strings.Contains(b.text(t, "#url-shown"), rc.URL+"/new") {
		t.Fatalf("after the edit the page says %q", msg)
	}

	b.do(t, "showing the secret", chromedp.Click(chromedp.CSS("#show-secret")))
	before := b.text(t, "#secret")
	b.do(t, "back", chromedp.Navigate(n.url+"/portal/subscriptions/"+sub), chromedp.WaitVisible(chromedp.CSS("#rotate-secret")), chromedp.Click(chromedp.CSS("#rotate-secret")))
	if msg := b.text(t, "#message"); !strings.HasPrefix(msg, "Rotated") {
		t.Fatalf("after rotating the page says %q", msg)
	}
	after, previous := b.text(t, "#secret"), b.text(t, ".previous-secret")
	if !strings.HasPrefix(before, "whsec_") || after == before || previous != before {
		t.Fatalf("the secret %q rotated to %q (previous %q)", before, after, previous)
	}

	b.do(t, "back to the subscription", chromedp.Navigate(n.url+"/portal/subscriptions/"+sub), chromedp.WaitVisible(chromedp.CSS("#send-test")),
		chromedp.Click(chromedp.CSS("#send-test")))
	if msg := b.text(t, "#message"); !strings.HasPrefix(msg, "A test event was sent") {
		t.Fatalf("after the test event the page says %q", msg)
	}
	eventually(t, "the test event delivered", func() bool {
		ds := n.deliveriesOf(sub)
		return len(ds) == 1 && ds[0].Status == delivery.StatusDelivered
	})
	b.do(t, "reloading", chromedp.Reload())
	if ds := b.text(t, "#deliveries"); !strings.Contains(ds, "delivered") {
		t.Fatalf("the deliveries show %q; want the test event delivered", ds)
	}
	b.shot(t, "portal-subscription")
	if got := rc.paths(); len(got) != 1 || got[0] != "/new" {
		t.Fatalf("the receiver got requests at %v; want one at /new", got)
	}
	b.noPolicyViolations(t)

	b.do(t, "opening the link again", chromedp.Navigate(n.url+link))
	if msg := b.text(t, "#message"); !strings.Contains(msg, "used already or has expired") {
		t.Fatalf("the link opened again says %q", msg)
	}
	if p := n.get(link, nil); p.status != http.StatusGone {
		t.Fatalf("the link opened again: %d", p.status)
	}
}
