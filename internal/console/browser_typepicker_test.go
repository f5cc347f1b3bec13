package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// checkedTypes is the script that reads the event types checked in the
// page's form, joined with commas.
const checkedTypes = `[...document.querySelectorAll('input[name="event_types"]:checked')].map(e => e.value).join(",")`

// TestBrowserSubscriptionTypePicker: in Chromium, the console's
// subscription form offers the catalog's event types as checkboxes, each
// with its description, not the archived one; with the account's
// settings.catalog_only it offers no field for other types. The operator
// picks two types; a save refused (a bad URL) shows the form again with
// both still picked; once saved the subscription takes them. A
// subscription taking an archived type is offered it on its edit form,
// checked, and saving keeps it.
func TestBrowserSubscriptionTypePicker(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	rc := newReceiver(t)
	ts := twoTenants(n)
	for name, desc := range map[string]string{"invoice.paid": "An invoice was paid.", "invoice.voided": "An invoice was voided.",
		"invoice.drafted": "An invoice was drafted."} {
		n.must(http.StatusCreated, adminKey, "POST", "/v1/event-types", map[string]any{"name": name, "description": desc})
	}
	n.must(http.StatusOK, adminKey, "DELETE", "/v1/event-types/invoice.drafted", nil)
	n.must(http.StatusOK, adminKey, "PATCH", "/v1/accounts/"+ts.shop, map[string]any{"settings": map[string]any{"catalog_only": true}})
	old := n.subscribe(ts.shopKey, "drafts", rc.URL+"/drafts")
	n.must(http.StatusOK, ts.shopKey, "PATCH", "/v1/subscriptions/"+old, map[string]any{"event_types": []string{"invoice.drafted"}})

	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/"))
	b.signIn(t, ts.shopKey)
	b.do(t, "opening the create form", chromedp.Click(chromedp.CSS("#new-subscription")), chromedp.WaitVisible(chromedp.CSS("#subscription-form")))
	offered := b.text(t, "#event-types")
	for _, want := range []string{"invoice.paid", "An invoice was paid.", "invoice.voided", "An invoice was voided."} {
		if !strings.Contains(offered, want) {
			t.Fatalf("the form's event types %q lack %q", offered, want)
		}
	}
	if strings.Contains(offered, "invoice.drafted") {
		t.Fatalf("the form offers the archived type: %q", offered)
	}
	if others := read(t, b, "counting the other types' fields", chromedp.Evaluate[float64](`document.querySelectorAll('#event_types').length`)); others != 0 {
		t.Fatal("with catalog_only the form has a field for types outside the catalog")
	}
	pick := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[name="event_types"][value=%q]`, name)))
	}
	b.do(t, "filling it in with a bad URL", chromedp.SendKeys(chromedp.CSS("#name"), "invoices"), chromedp.SendKeys(chromedp.CSS("#url"), "ftp://nowhere"),
		pick("invoice.paid"), pick("invoice.voided"), chromedp.Click(chromedp.CSS("#save")))
	if p := b.text(t, "#problem"); !strings.Contains(p, "url") {
		t.Fatalf("the refused save says %q; want the url's problem", p)
	}
	if got := read(t, b, "reading the types checked", chromedp.Evaluate[string](checkedTypes)); got != "invoice.paid,invoice.voided" {
		t.Fatalf("after the refused save the types checked are %q; want both kept", got)
	}
	b.shot(t, "subscription-type-picker")
	b.do(t, "saving with a good URL", chromedp.SetValue(chromedp.CSS("#url"), rc.URL+"/ok"), chromedp.Click(chromedp.CSS("#save")))
	if msg := b.text(t, "#message"); msg != "Created." {
		t.Fatalf("after creating the page says %q", msg)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(read(t, b, "reading the address", chromedp.Location()), n.url+"/console/subscriptions/"), "?done=created")
	if got := fmt.Sprint(subOf(n, ts.shopKey, id)["event_types"]); got != "[invoice.paid invoice.voided]" {
		t.Fatalf("the subscription made takes %s; want the two picked", got)
	}

	b.do(t, "editing the one of the archived type", chromedp.Navigate(n.url+"/console/subscriptions/"+old+"/edit"),
		chromedp.WaitVisible(chromedp.CSS("#subscription-form")))
	if got := read(t, b, "reading the types checked", chromedp.Evaluate[string](checkedTypes)); got != "invoice.drafted" ||
		!strings.Contains(b.text(t, "#event-types"), "archived") {
		t.Fatalf("the edit form of a subscription to an archived type: %q checked in %q", got, b.text(t, "#event-types"))
	}
	b.do(t, "saving it with a new URL", chromedp.SetValue(chromedp.CSS("#url"), rc.URL+"/drafts2"), chromedp.Click(chromedp.CSS("#save")))
	if msg := b.text(t, "#message"); msg != "Saved." {
		t.Fatalf("after saving the page says %q", msg)
	}
	if got := fmt.Sprint(subOf(n, ts.shopKey, old)["event_types"]); got != "[invoice.drafted]" {
		t.Fatalf("after the save the subscription takes %s; want the archived type kept", got)
	}
	b.noPolicyViolations(t)
}
