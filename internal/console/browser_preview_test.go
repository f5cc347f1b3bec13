package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The CEL fields of the subscription forms and their Preview.

// orderExample is the catalog's example of order.created in the preview
// tests.
const orderExample = `{"amount": 150, "currency": "EUR", "items": [1, 2]}`

// chatTransform reshapes an order into a chat message.
const chatTransform = `{"text": "Order " + event.id + ": " + string(data.amount) + " " + data.currency}`

// addOrderType adds order.created to the catalog with orderExample (the
// admin's API).
func addOrderType(n *node) {
	n.t.Helper()
	n.must(http.StatusCreated, adminKey, "POST", "/v1/event-types", map[string]any{"name": "order.created",
		"schemas": map[string]any{"1": map[string]any{"type": "object"}}, "examples": []json.RawMessage{json.RawMessage(orderExample)}})
}

// bodies is a receiver on 127.0.0.1 that answers 200 and hands over each
// request's body.
type bodies struct {
	*httptest.Server
	got chan string
}

func newBodies(t *testing.T) *bodies {
	b := &bodies{got: make(chan string, 16)}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.got <- string(body)
	}))
	t.Cleanup(b.Close)
	return b
}

// next returns the next body received (failing the test after 60 s).
func (b *bodies) next(t *testing.T) string {
	t.Helper()
	select {
	case body := <-b.got:
		return body
	case <-time.After(60 * time.Second):
		t.Fatal("timed out waiting for a push")
		return ""
	}
}

// TestBrowserPreviewIsWhatIsPushed: in Chromium, an account key types a
// filter expression and a transform into the create form and previews the
// catalog's example of its type: the page shows the exact body a push
// would carry, and the example is put in the event box; an event the
// filter expression rejects previews as not matching. A transform that
// does not compile is refused on Create, CEL's message and position beside
// the transform, what was typed kept, and nothing made. Saved, the
// subscription's page shows both expressions; the edit form previews the
// event of its latest delivery; and the example published through the API
// is pushed to a real receiver with the very body the preview showed.
func TestBrowserPreviewIsWhatIsPushed(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	rc := newBodies(t)
	addOrderType(n)
	_, _, key := n.tenant("shop", "account")

	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/login"))
	b.signIn(t, key)
	b.do(t, "waiting for the subscriptions", chromedp.WaitVisible(chromedp.CSS("#sign-out")))
	b.do(t, "typing a new subscription with its expressions", chromedp.Navigate(n.url+"/console/subscriptions/new"),
		chromedp.WaitVisible(chromedp.CSS("#subscription-form")),
		chromedp.SendKeys(chromedp.CSS("#name"), "chat"), chromedp.SendKeys(chromedp.CSS("#url"), rc.URL+"/chat"),
		chromedp.SendKeys(chromedp.CSS("#event_types"), "order.created"),
		chromedp.SendKeys(chromedp.CSS("#filter_expression"), "data.amount > 100.0"),
		chromedp.SendKeys(chromedp.CSS("#transform"), chatTransform))
	b.do(t, "previewing the example", chromedp.SetValue(chromedp.CSS("#preview_from"), "example:order.created:1"),
		chromedp.Click(chromedp.CSS("#preview")), chromedp.WaitVisible(chromedp.CSS("#preview-body")))
	shown := b.text(t, "#preview-body")
	var pushed map[string]any
	if err := json.Unmarshal([]byte(shown), &pushed); err != nil || pushed["type"] != "order.created" || pushed["id"] != "example-1" ||
		!strings.Contains(shown, `"data":{"text":"Order example-1: 150 EUR"}`) {
		t.Fatalf("the preview shows the body %q (%v)", shown, err)
	}
	if v := b.text(t, "#preview-verdict"); !strings.Contains(v, "Content-Type: application/cloudevents+json") {
		t.Fatalf("the preview says %q", v)
	}
	example := b.value(t, "#preview_event")
	if !strings.Contains(example, `"amount": 150`) || b.value(t, "#transform") != chatTransform || b.value(t, "#name") != "chat" {
		t.Fatalf("after the preview the form holds the event %q and the transform %q", example, b.value(t, "#transform"))
	}
	b.do(t, "typing a small order", chromedp.SetValue(chromedp.CSS("#preview_event"), strings.Replace(example, "150", "50", 1)))
	b.submit(t, "previewing it", "#preview", "#preview-result")
	if v := b.text(t, "#preview-verdict"); !strings.HasPrefix(v, "Does not match: filter_expression is false") {
		t.Fatalf("the preview of a small order says %q", v)
	}

	bad := `{"text": data.amont +}`
	b.do(t, "creating with a transform that does not compile", chromedp.SetValue(chromedp.CSS("#transform"), bad),
		chromedp.Click(chromedp.CSS("#save")), chromedp.WaitVisible(chromedp.CSS("#problem")))
	if e := b.text(t, "#transform + .field-error"); !strings.HasPrefix(e, "transform.cel: line 1, column") || !strings.Contains(e, "Syntax error") {
		t.Fatalf("beside the transform the form says %q", e)
	}
	if tr, fe, name := b.value(t, "#transform"), b.value(t, "#filter_expression"), b.value(t, "#name"); tr != bad || fe != "data.amount > 100.0" || name != "chat" {
		t.Fatalf("the refused form holds %q, %q and %q; want what was typed", tr, fe, name)
	}
	if c := countOf(n, key); c != 0 {
		t.Fatalf("a refused form made %d subscriptions", c)
	}
	b.do(t, "creating it", chromedp.SetValue(chromedp.CSS("#transform"), chatTransform), chromedp.Click(chromedp.CSS("#save")),
		chromedp.WaitVisible(chromedp.CSS("#message")))
	if fe, tr := b.text(t, "#filter-expression"), b.text(t, "dd#transform"); fe != "data.amount > 100.0" || tr != chatTransform {
		t.Fatalf("the subscription's page shows the filter expression %q and the transform %q", fe, tr)
	}

	n.must(http.StatusAccepted, key, "POST", "/v1/events", json.RawMessage(example))
	if got := rc.next(t); got != shown {
		t.Fatalf("the push carried\n%s\nthe preview showed\n%s", got, shown)
	}
	b.do(t, "previewing the delivered event on the edit form", chromedp.Click(chromedp.CSS("#edit")), chromedp.WaitVisible(chromedp.CSS("#preview_from")))
	delivered := read(t, b, "reading the choices", chromedp.AttributeValue(chromedp.CSS(`#preview_from option[value^="delivery:"]`), "value")).Value
	b.do(t, "previewing it", chromedp.SetValue(chromedp.CSS("#preview_from"), delivered), chromedp.Click(chromedp.CSS("#preview")),
		chromedp.WaitVisible(chromedp.CSS("#preview-body")))
	if again := b.text(t, "#preview-body"); again != shown {
		t.Fatalf("the delivered event previews as\n%s\nnot\n%s", again, shown)
	}
	b.do(t, "scrolling to the preview", chromedp.ScrollIntoView(chromedp.CSS("#preview")))
	b.shot(t, "console-subscription-preview")
	b.noPolicyViolations(t)
}

// submit clicks sel, a button that sends its form, and waits for the
// answer's page to show want (the page sent from is marked, so that what
// it shows is not taken for the answer's).
func (b *browser) submit(t *testing.T, what, sel, want string) {
	t.Helper()
	read(t, b, "marking the page", chromedp.Evaluate[bool](`document.body.dataset.sent = "1", true`))
	b.do(t, what, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS("body:not([data-sent]) "+want)))
}
