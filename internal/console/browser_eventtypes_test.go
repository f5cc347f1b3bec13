package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// paidSchema is version 1 of invoice.paid in the catalog's browser tests.
const paidSchema = `{"type": "object", "required": ["id", "amount"], "properties": {"amount": {"type": "number", "minimum": 0}}}`

// TestBrowserEventTypes: in Chromium, the admin adds a type from the
// catalog's page (a schema that does not compile is refused on the form,
// naming schemas.1, what was typed kept), sees it listed under its group,
// opens it (its schema and example), adds version 2 (a published one is
// immutable: the form takes only the next), and archives it; an account
// key reads the catalog without the forms.
func TestBrowserEventTypes(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	_, _, shopKey := n.tenant("shop", "account")

	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/"))
	b.signIn(t, adminKey)
	b.do(t, "opening the catalog", chromedp.Click(chromedp.CSS(`nav a[href="/console/event-types"]`)), chromedp.WaitVisible(chromedp.CSS("#event-type-form")))
	b.text(t, "#no-event-types")
	b.do(t, "adding a type with a bad schema", chromedp.SendKeys(chromedp.CSS("#name"), "invoice.paid"),
		chromedp.SendKeys(chromedp.CSS("#group"), "billing"), chromedp.SendKeys(chromedp.CSS("#description"), "An invoice was paid."),
		chromedp.SetValue(chromedp.CSS("#schema"), `{"type": "objekt"}`), chromedp.Click(chromedp.CSS("#create-event-type")))
	if p := b.text(t, "#problem"); !strings.Contains(p, "schemas.1") || !strings.Contains(p, "does not compile") {
		t.Fatalf("the refused type's problem says %q", p)
	}
	if kept := read(t, b, "reading the name kept", chromedp.Value(chromedp.CSS("#name"))); kept != "invoice.paid" {
		t.Fatalf("the refused form kept the name %q", kept)
	}
	b.do(t, "adding it with a good schema", chromedp.SetValue(chromedp.CSS("#schema"), paidSchema),
		chromedp.SetValue(chromedp.CSS("#example"), `{"id": "in_1", "amount": 12.5}`), chromedp.Click(chromedp.CSS("#create-event-type")))
	if msg := b.text(t, "#message"); !strings.Contains(msg, "Event type created") {
		t.Fatalf("after creating the page says %q", msg)
	}
	if s := b.text(t, "#schema-1"); !strings.Contains(s, `"minimum": 0`) || !strings.Contains(b.text(t, "#example-0"), `"in_1"`) {
		t.Fatalf("the type's page shows schema %q", s)
	}
	b.do(t, "adding version 2", chromedp.SetValue(chromedp.CSS("#schema"), `{"type": "object", "required": ["id", "amount", "currency"]}`),
		chromedp.SetValue(chromedp.CSS("#example"), `{"id": "in_2", "amount": 1, "currency": "EUR"}`), chromedp.Click(chromedp.CSS("#add-version")), chromedp.WaitVisible(chromedp.CSS("#schema-2")))
	if msg := b.text(t, "#message"); msg != "Version added." || b.text(t, "#version-count") != "2" || !strings.Contains(b.text(t, "#schema-2"), "currency") {
		t.Fatalf("after adding version 2 the page says %q", msg)
	}
	b.shot(t, "console-event-type")
	b.do(t, "back to the list", chromedp.Click(chromedp.CSS(`.crumbs a`)), chromedp.WaitVisible(chromedp.CSS(".event-types")))
	if g := b.text(t, "h2.group"); g != "billing" {
		t.Fatalf("the list's group heading is %q", g)
	}
	b.do(t, "archiving", chromedp.Click(chromedp.CSS(`a[href="/console/event-types/invoice.paid"]`)), chromedp.WaitVisible(chromedp.CSS("#archive")),
		chromedp.Click(chromedp.CSS("#archive")))
	if msg := b.text(t, "#message"); !strings.HasPrefix(msg, "Archived") {
		t.Fatalf("after archiving the page says %q", msg)
	}
	b.noPolicyViolations(t)
	if et := n.must(http.StatusOK, shopKey, "GET", "/v1/event-types/invoice.paid", nil); et["archived"] != true {
		t.Fatalf("the type after the archive: %v", et)
	}

	b.do(t, "signing out", chromedp.Click(chromedp.CSS("#sign-out")), chromedp.WaitVisible(chromedp.CSS("#key")))
	b.signIn(t, shopKey)
	b.text(t, ".who .key")
	b.do(t, "the account key's catalog", chromedp.Navigate(n.url+"/console/event-types?archived=1"), chromedp.WaitVisible(chromedp.CSS(".event-types")))
	html := read(t, b, "reading the page", chromedp.OuterHTML(chromedp.CSS("main")))
	if !strings.Contains(html, "invoice.paid") || strings.Contains(html, "event-type-form") {
		t.Fatalf("the account key's catalog page: %s", html)
	}
}

// TestBrowserPortalEventTypes: in Chromium, the portal of an account
// without settings.portal_event_types offers the catalog's types (not the
// archived ones) as boxes on the create form; the subscriber reads their
// description, schema and example on the portal's event types page, picks
// one, creates the subscription, and edits it to take the other. With
// settings.portal_event_types, only those are offered.
func TestBrowserPortalEventTypes(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	rc := newReceiver(t)
	shop, _, shopKey := n.tenant("shop", "account")
	n.must(http.StatusCreated, adminKey, "POST", "/v1/event-types", map[string]any{"name": "invoice.paid", "description": "An invoice was paid.",
		"group": "billing", "schemas": map[string]any{"1": map[string]any{"type": "object", "required": []string{"amount"}}},
		"examples": []any{map[string]any{"amount": 12.5}}})
	n.must(http.StatusCreated, adminKey, "POST", "/v1/event-types", map[string]any{"name": "invoice.voided", "description": "An invoice was voided."})
	n.must(http.StatusCreated, adminKey, "POST", "/v1/event-types", map[string]any{"name": "old.thing"})
	n.must(http.StatusOK, adminKey, "DELETE", "/v1/event-types/old.thing", nil)

	b.do(t, "opening the portal", chromedp.Navigate(n.url+portalLink(n, shopKey, map[string]any{"ttl": "30m"})))
	b.do(t, "opening its event types", chromedp.Click(chromedp.CSS(`nav a[href="/portal/event-types"]`)), chromedp.WaitVisible(chromedp.CSS(`[id="type-invoice.paid"]`)))
	if s := b.text(t, `[id="type-invoice.paid"]`); !strings.Contains(s, "An invoice was paid.") || !strings.Contains(s, `"required"`) || !strings.Contains(s, "12.5") {
		t.Fatalf("the portal shows invoice.paid as %q; want its description, schema and example", s)
	}
	if page := b.text(t, "main"); strings.Contains(page, "old.thing") {
		t.Fatalf("the portal offers an archived type: %q", page)
	}
	b.shot(t, "portal-event-types")
	b.do(t, "to the subscriptions", chromedp.Click(chromedp.CSS(`nav a[href="/portal/subscriptions"]`)), chromedp.WaitVisible(chromedp.CSS("#event-types")))
	if boxes := b.text(t, "#event-types"); !strings.Contains(boxes, "invoice.voided") || strings.Contains(boxes, "old.thing") {
		t.Fatalf("the create form offers %q", boxes)
	}
	b.do(t, "creating a subscription to invoice.paid", chromedp.SendKeys(chromedp.CSS("#name"), "billing"),
		chromedp.SendKeys(chromedp.CSS("#url"), rc.URL), chromedp.Click(chromedp.CSS(`#event-types input[value="invoice.paid"]`)),
		chromedp.Click(chromedp.CSS("#create-subscription")))
	if msg := b.text(t, "#message"); msg != "Subscription created." || !strings.Contains(b.text(t, "#types-shown"), "invoice.paid") {
		t.Fatalf("after creating the page says %q", msg)
	}
	b.do(t, "taking invoice.voided instead", chromedp.Click(chromedp.CSS(`#event-types input[value="invoice.paid"]`)),
		chromedp.Click(chromedp.CSS(`#event-types input[value="invoice.voided"]`)), chromedp.Click(chromedp.CSS("#save")))
	b.waitLocation(t, "done=saved")
	if shown := b.text(t, "#types-shown"); shown != "invoice.voided" {
		t.Fatalf("after the edit the types are %q", shown)
	}
	b.noPolicyViolations(t)

	n.must(http.StatusOK, adminKey, "PATCH", "/v1/accounts/"+shop, map[string]any{"settings": map[string]any{"portal_event_types": []string{"invoice.paid"}}})
	b.do(t, "the portal's types with portal_event_types", chromedp.Navigate(n.url+"/portal/subscriptions"), chromedp.WaitVisible(chromedp.CSS("#event-types")))
	if boxes := b.text(t, "#event-types"); !strings.Contains(boxes, "invoice.paid") || strings.Contains(boxes, "invoice.voided") {
		t.Fatalf("with portal_event_types the form offers %q", boxes)
	}
}

// waitLocation waits until the browser's address holds part (a form's
// answer has loaded).
func (b *browser) waitLocation(t *testing.T, part string) {
	t.Helper()
	eventually(t, "the address to hold "+part, func() bool {
		loc, err := chromedp.Run(b.ctx, chromedp.Location())
		return err == nil && strings.Contains(loc, part)
	})
	b.do(t, "waiting for the page", chromedp.WaitReady(chromedp.CSS("main")))
}
