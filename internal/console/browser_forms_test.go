package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserFormsKeepWhatWasTyped: in Chromium, a portal create with an
// ftp:// URL is shown again (no separate error page) with the name and URL
// typed and the error beside the URL; so is a console create with a header
// line without a colon. Saving a console or portal edit form as it came
// says nothing changed, and changes nothing; saving a change says
// "Saved.". The recover forms' example time is an hour before now.
func TestBrowserFormsKeepWhatWasTyped(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	rc := newReceiver(t)
	_, _, key := n.tenant("shop", "account")
	sub := n.subscribe(key, "orders", rc.URL+"/ok")
	since := "since " + n.clk.Now().Add(-time.Hour).UTC().Format(time.RFC3339)

	b.do(t, "opening the portal", chromedp.Navigate(n.url+portalLink(n, key, map[string]any{"ttl": "30m"})), chromedp.WaitVisible(chromedp.CSS("#create")))
	b.do(t, "creating with an ftp URL", chromedp.SendKeys(chromedp.CSS("#name"), "ledger"),
		chromedp.SetAttributeValue(chromedp.CSS("#url"), "type", "text"), // the browser's own check would stop ftp://
		chromedp.SendKeys(chromedp.CSS("#url"), "ftp://nope"), chromedp.Click(chromedp.CSS("#create-subscription")),
		chromedp.WaitVisible(chromedp.CSS("#problem")))
	if name, u := b.value(t, "#name"), b.value(t, "#url"); name != "ledger" || u != "ftp://nope" {
		t.Fatalf("the refused create form holds %q and %q; want what was typed", name, u)
	}
	if e := b.text(t, "#url + .field-error"); !strings.Contains(e, "http") {
		t.Fatalf("beside the URL the form says %q", e)
	}
	b.do(t, "opening the subscription", chromedp.Navigate(n.url+"/portal/subscriptions/"+sub), chromedp.WaitVisible(chromedp.CSS("#save")))
	if ph := b.attr(t, `#recover-form input[name="since"]`, "placeholder"); ph != since {
		t.Fatalf("the portal's recover form's example is %q; want %q", ph, since)
	}
	b.do(t, "saving it as it is", chromedp.Click(chromedp.CSS("#save")))
	if msg := b.text(t, "#message"); !strings.HasPrefix(msg, "Nothing changed") {
		t.Fatalf("after saving the portal's form unchanged the page says %q", msg)
	}

	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/login"))
	b.signIn(t, key)
	b.text(t, "#subscriptions")
	b.do(t, "opening the create form", chromedp.Navigate(n.url+"/console/subscriptions/new"), chromedp.WaitVisible(chromedp.CSS("#subscription-form")))
	b.do(t, "creating with a bad header", chromedp.SendKeys(chromedp.CSS("#name"), "ledger"), chromedp.SendKeys(chromedp.CSS("#url"), rc.URL+"/ledger"),
		chromedp.SendKeys(chromedp.CSS("#headers"), "X-Team payments"), chromedp.Click(chromedp.CSS("#save")), chromedp.WaitVisible(chromedp.CSS("#problem")))
	if name, h := b.value(t, "#name"), b.value(t, "#headers"); name != "ledger" || h != "X-Team payments" {
		t.Fatalf("the refused console form holds %q and %q; want what was typed", name, h)
	}
	if e := b.text(t, "#headers + .field-error"); !strings.Contains(e, "Name: value") {
		t.Fatalf("beside the headers the form says %q", e)
	}
	b.do(t, "editing orders unchanged", chromedp.Navigate(n.url+"/console/subscriptions/"+sub+"/edit"), chromedp.WaitVisible(chromedp.CSS("#save")),
		chromedp.Click(chromedp.CSS("#save")))
	if msg := b.text(t, "#message"); !strings.HasPrefix(msg, "Nothing changed") {
		t.Fatalf("after saving the console's form unchanged the page says %q", msg)
	}
	if ph := b.attr(t, `#recover-form input[name="since"]`, "placeholder"); ph != since {
		t.Fatalf("the console's recover form's example is %q; want %q", ph, since)
	}
	b.do(t, "editing orders' event types", chromedp.Navigate(n.url+"/console/subscriptions/"+sub+"/edit"), chromedp.WaitVisible(chromedp.CSS("#save")),
		chromedp.SendKeys(chromedp.CSS("#event_types"), "order.paid"), chromedp.Click(chromedp.CSS("#save")))
	if msg := b.text(t, "#message"); msg != "Saved." {
		t.Fatalf("after a change the page says %q", msg)
	}
	if got := fmt.Sprint(n.must(http.StatusOK, key, "GET", "/v1/subscriptions/"+sub, nil)["event_types"]); got != "[order.paid]" {
		t.Fatalf("the API's event types after the change: %s", got)
	}
	b.noPolicyViolations(t)
}

// value returns the value of the form field sel.
func (b *browser) value(t *testing.T, sel string) string {
	t.Helper()
	return read(t, b, "reading "+sel, chromedp.Value(chromedp.CSS(sel)))
}

// attr returns the attribute name of the element sel.
func (b *browser) attr(t *testing.T, sel, name string) string {
	t.Helper()
	return read(t, b, "reading "+sel+"'s "+name, chromedp.AttributeValue(chromedp.CSS(sel), name)).Value
}
