package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/herald-events/herald/internal/delivery"
)

// TestBrowserSubscriptionActions: in Chromium, an operator creates a
// subscription pushing to a real receiver on 127.0.0.1 (the test's Herald
// allows private destinations explicitly), sends it a test event and sees
// it delivered, rotates its secret, edits its URL, and deletes it after
// confirming.
func TestBrowserSubscriptionActions(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	rc := newReceiver(t)

	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/"))
	b.signIn(t, adminKey)
	b.do(t, "opening the create form", chromedp.Click(chromedp.CSS("#new-subscription")), chromedp.WaitVisible(chromedp.CSS("#subscription-form")))
	b.do(t, "filling it in", chromedp.SendKeys(chromedp.CSS("#name"), "orders"), chromedp.SendKeys(chromedp.CSS("#url"), rc.URL+"/ok"),
		chromedp.SendKeys(chromedp.CSS("#event_types"), "order.paid"), chromedp.Click(chromedp.CSS("#save")))
	if msg := b.text(t, "#message"); msg != "Created." {
		t.Fatalf("after creating the page says %q", msg)
	}
	loc := read(t, b, "reading the address", chromedp.Location())
	id := strings.TrimSuffix(strings.TrimPrefix(loc, n.url+"/console/subscriptions/"), "?done=created")
	if got := subOf(n, adminKey, id); got["url"] != rc.URL+"/ok" {
		t.Fatalf("the subscription made from the browser: %v", got)
	}

	b.do(t, "sending a test event", chromedp.Click(chromedp.CSS("#send-test")), chromedp.WaitVisible(chromedp.CSS("#redeliver")))
	dlv := strings.TrimPrefix(read(t, b, "reading the address", chromedp.Location()), n.url+"/console/deliveries/")
	eventually(t, "the test event delivered", func() bool { return n.delivery(dlv).Status == delivery.StatusDelivered })
	b.do(t, "reloading its delivery", chromedp.Reload())
	if st := b.text(t, "#status"); st != "delivered" {
		t.Fatalf("the test event's delivery shows %q", st)
	}

	b.do(t, "back to the subscription", chromedp.Click(chromedp.CSS(`#fields a[href="/console/subscriptions/`+id+`"]`)), chromedp.WaitVisible(chromedp.CSS("#rotate")))
	b.shot(t, "subscription")
	b.do(t, "rotating the secret", chromedp.SendKeys(chromedp.CSS(`input[name="grace"]`), "1h"), chromedp.Click(chromedp.CSS("#rotate")))
	shown := b.text(t, "#new-secret")
	secret := n.must(http.StatusOK, adminKey, "GET", "/v1/subscriptions/"+id+"/secret", nil)
	if shown != secret["secret"] || len(secret["previous"].([]any)) != 1 {
		t.Fatalf("the page shows the secret %q; the API %v", shown, secret)
	}

	b.do(t, "editing the URL", chromedp.Click(chromedp.CSS("#back")), chromedp.Click(chromedp.CSS("#edit")), chromedp.WaitVisible(chromedp.CSS("#subscription-form")),
		chromedp.SetValue(chromedp.CSS("#url"), rc.URL+"/edited"), chromedp.Click(chromedp.CSS("#save")))
	if msg := b.text(t, "#message"); msg != "Saved." {
		t.Fatalf("after editing the page says %q", msg)
	}
	if fields := b.text(t, "#fields"); !strings.Contains(fields, rc.URL+"/edited") || !strings.Contains(fields, "order.paid") {
		t.Fatalf("after editing the URL the fields show %q", fields)
	}

	b.do(t, "deleting it", chromedp.Click(chromedp.CSS("#delete")), chromedp.WaitVisible(chromedp.CSS("#confirm-delete")))
	subOf(n, adminKey, id) // asking deletes nothing
	b.do(t, "confirming", chromedp.Click(chromedp.CSS("#confirm-delete")), chromedp.WaitVisible(chromedp.CSS("#no-subscriptions")))
	n.must(http.StatusNotFound, adminKey, "GET", "/v1/subscriptions/"+id, nil)
	b.noPolicyViolations(t)
}
