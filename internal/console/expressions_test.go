package console_test

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/delivery"
)

// The CEL fields and the Preview of the console's and the portal's
// subscription forms, over HTTP (browser_preview_test.go has the console's
// in Chromium).

// inPage returns the text of the element of the page with the id, a
// textarea, pre or dd (its content without tags, unescaped), "" for none.
func inPage(body, id string) string {
	m := regexp.MustCompile(`(?s)id="` + regexp.QuoteMeta(id) + `"[^>]*>(.*?)</(textarea|pre|dd)>`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(tag.ReplaceAllString(m[1], ""))
}

var tag = regexp.MustCompile(`<[^>]*>`)

// awkward is a filter expression with the characters HTML escapes.
const awkward = `data.note == "<b>&'x'</b>" || event.type != "a>b"`

// TestExpressionsOnTheConsoleForm: the edit form shows a subscription's
// expressions as they are (escaped), and saving it as it came changes
// nothing; an emptied filter expression removes it; a transform on
// several lines (a browser's CRLF) is kept with LF, and sent again changes
// nothing; a filter expression
// that is not a bool is refused beside it, naming filter_expression, and
// changes nothing. A pull subscription's form offers no transform. The
// preview takes only the subscription's own deliveries (another's is
// refused beside the choice, its event not shown), and a preview of an
// event that is not one names its field; neither changes anything. The
// filter test's page shows the body a push would carry, transformed.
func TestExpressionsOnTheConsoleForm(t *testing.T) {
	n := setup(t)
	ts := twoTenants(n)
	rc := newReceiver(t)
	id := n.must(http.StatusCreated, ts.shopKey, "POST", "/v1/subscriptions", map[string]any{"name": "orders", "url": rc.URL + "/ok",
		"filter_expression": awkward, "transform": map[string]any{"cel": `{"n": 1}`}})["id"].(string)
	a := signInAs(n, ts.shopKey)
	form := n.get("/console/subscriptions/"+id+"/edit", a.cookie)
	if fe, tr := inPage(form.body, "filter_expression"), inPage(form.body, "transform"); fe != awkward || tr != `{"n": 1}` {
		t.Fatalf("the edit form shows %q and %q\n%s", fe, tr, form.body)
	}
	fields := map[string]string{"name": "orders", "url": rc.URL + "/ok", "filter_expression": awkward, "transform": `{"n": 1}`}
	if p := a.post("/console/subscriptions/"+id+"/edit", fields); p.header.Get("Location") != "/console/subscriptions/"+id+"?done=unchanged" {
		t.Fatalf("saving the form as it came: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	page := n.get("/console/subscriptions/"+id, a.cookie)
	if inPage(page.body, "filter-expression") != awkward {
		t.Fatalf("the subscription's page shows the filter expression %q", inPage(page.body, "filter-expression"))
	}
	before := subJSON(n, ts.shopKey, id)
	fields["filter_expression"] = `event.type + "x"`
	refused(t, "a filter expression that is not a bool", a.post("/console/subscriptions/"+id+"/edit", fields),
		http.StatusBadRequest, "filter_expression", "filter_expression")
	if after := subJSON(n, ts.shopKey, id); after != before {
		t.Fatalf("a refused expression changed the subscription:\n%s\n%s", before, after)
	}
	fields["filter_expression"] = ""
	if p := a.post("/console/subscriptions/"+id+"/edit", fields); p.header.Get("Location") != "/console/subscriptions/"+id+"?done=saved" {
		t.Fatalf("emptying the filter expression: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	if got := subOf(n, ts.shopKey, id); got["filter_expression"] != nil && got["filter_expression"] != "" || got["transform"] == nil {
		t.Fatalf("after emptying the filter expression: %v", got)
	}
	fields["transform"] = "{\r\n  \"n\": 2\r\n}"
	if p := a.post("/console/subscriptions/"+id+"/edit", fields); p.header.Get("Location") != "/console/subscriptions/"+id+"?done=saved" {
		t.Fatalf("a transform on three lines: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	if got := subOf(n, ts.shopKey, id)["transform"]; got.(map[string]any)["cel"] != "{\n  \"n\": 2\n}" {
		t.Fatalf("the transform typed on three lines is stored as %q", got)
	}
	if p := a.post("/console/subscriptions/"+id+"/edit", fields); p.header.Get("Location") != "/console/subscriptions/"+id+"?done=unchanged" {
		t.Fatalf("saving the three lines again: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	saved := subJSON(n, ts.shopKey, id)

	pull := n.pullSubscription(ts.shopKey)
	if p := n.get("/console/subscriptions/"+pull+"/edit", a.cookie); strings.Contains(p.body, `id="transform"`) || !strings.Contains(p.body, `id="filter_expression"`) {
		t.Fatalf("a pull subscription's form:\n%s", p.body)
	}

	rivalSub := n.subscribe(ts.rivalKey, "rival", rc.URL+"/ok")
	n.must(http.StatusAccepted, ts.rivalKey, "POST", "/v1/events", map[string]any{"specversion": "1.0", "id": "rival-secret-event",
		"source": "/rival", "type": "order.paid"})
	eventually(t, "the rival's delivery", func() bool { return len(n.deliveriesOf(rivalSub)) == 1 })
	other := n.deliveriesOf(rivalSub)[0].ID
	fields["preview_from"], fields["transform"] = "delivery:"+other, "null"
	p := a.post("/console/subscriptions/"+id+"/preview", fields)
	if p.status != http.StatusBadRequest || !refusedField(p.body, "preview_from") || strings.Contains(p.body, "rival-secret-event") {
		t.Fatalf("a preview of another account's delivery: %d\n%s", p.status, p.body)
	}
	fields["preview_from"], fields["preview_event"] = "", `{"specversion": "1.0", "id": "x", "source": "/s"}`
	if p := a.post("/console/subscriptions/"+id+"/preview", fields); p.status != http.StatusBadRequest || !refusedField(p.body, "preview_event") ||
		!strings.Contains(inPage(p.body, "preview_event")+p.body, "type") {
		t.Fatalf("a preview of an event without a type: %d\n%s", p.status, p.body)
	}
	if after := subJSON(n, ts.shopKey, id); after != saved {
		t.Fatalf("the previews changed the subscription:\n%s\n%s", saved, after)
	}
	ft := a.post("/console/subscriptions/"+id+"/filter-test", map[string]string{"event": `{"specversion": "1.0", "id": "ft-1", "source": "/shop", "type": "order.paid"}`})
	if body := inPage(ft.body, "preview-body"); ft.status != http.StatusOK || !strings.HasSuffix(body, `"data":{"n":2}}`) || !strings.Contains(body, `"id":"ft-1"`) {
		t.Fatalf("the filter test's page: %d\n%s", ft.status, ft.body)
	}
}

// TestPortalExpressionsAndPreview: a portal session's create form takes a
// filter expression and a transform and previews a catalog example of a
// type the account may choose (not another's: refused beside the
// choice), saving nothing; a transform that does not compile is refused
// beside it with CEL's message, what was typed kept, nothing made. Once
// made, the example published through the API is pushed with the very
// body the preview showed; the subscription's page shows its expressions
// and previews its own delivery's event the same; saving its form as it
// came changes nothing.
func TestPortalExpressionsAndPreview(t *testing.T) {
	n := setup(t)
	rc := newBodies(t)
	addOrderType(n)
	n.must(http.StatusCreated, adminKey, "POST", "/v1/event-types", map[string]any{"name": "invoice.paid",
		"examples": []json.RawMessage{json.RawMessage(`{"invoice": "in_1"}`)}})
	shop, _, key := n.tenant("shop", "account")
	n.must(http.StatusOK, adminKey, "PATCH", "/v1/accounts/"+shop, map[string]any{"settings": map[string]any{
		"portal_event_types": []string{"order.created"}}})
	ck := openPortal(n, portalLink(n, key, map[string]any{}))
	list := n.get("/portal/subscriptions", ck)
	if !strings.Contains(list.body, `value="example:order.created:1"`) || strings.Contains(list.body, "example:invoice.paid") {
		t.Fatalf("the create form's preview choices:\n%s", list.body)
	}
	csrf := csrfOf(t, list)
	form := url.Values{"csrf": {csrf}, "name": {"chat"}, "url": {rc.URL + "/chat"}, "event_types": {"order.created"},
		"filter_expression": {"data.amount > 100.0"}, "transform": {chatTransform}, "preview_from": {"example:invoice.paid:1"}}
	if p := n.post("/portal/subscriptions/preview", ck, form); p.status != http.StatusBadRequest || !refusedField(p.body, "preview_from") ||
		strings.Contains(p.body, "in_1") {
		t.Fatalf("a preview of a type the account may not choose: %d\n%s", p.status, p.body)
	}
	form.Set("preview_from", "example:order.created:1")
	p := n.post("/portal/subscriptions/preview", ck, form)
	shown, example := inPage(p.body, "preview-body"), inPage(p.body, "preview_event")
	if p.status != http.StatusOK || !strings.Contains(shown, `"data":{"text":"Order example-1: 150 EUR"}`) || !strings.Contains(example, `"amount": 150`) ||
		inPage(p.body, "transform") != chatTransform {
		t.Fatalf("the preview: %d\n%s", p.status, p.body)
	}
	form.Set("transform", `{"text": data.amont +}`)
	if p := n.post("/portal/subscriptions", ck, form); p.status != http.StatusBadRequest || !refusedField(p.body, "transform") ||
		!strings.Contains(p.body, "transform.cel: line 1, column") || inPage(p.body, "transform") != `{"text": data.amont +}` {
		t.Fatalf("a transform that does not compile: %d\n%s", p.status, p.body)
	}
	if c := countOf(n, key); c != 0 {
		t.Fatalf("the previews and a refused form made %d subscriptions", c)
	}
	form.Set("transform", chatTransform)
	p = n.post("/portal/subscriptions", ck, form)
	sub := strings.TrimSuffix(strings.TrimPrefix(p.header.Get("Location"), "/portal/subscriptions/"), "?done=created")
	if p.status != http.StatusSeeOther || !strings.HasPrefix(sub, "sub_") {
		t.Fatalf("creating: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	n.must(http.StatusAccepted, key, "POST", "/v1/events", json.RawMessage(example))
	if got := rc.next(t); got != shown {
		t.Fatalf("the push carried\n%s\nthe preview showed\n%s", got, shown)
	}
	eventually(t, "the delivery delivered", func() bool {
		ds := n.deliveriesOf(sub)
		return len(ds) == 1 && ds[0].Status == delivery.StatusDelivered
	})
	d := n.deliveriesOf(sub)[0].ID
	page := n.get("/portal/subscriptions/"+sub, ck)
	if inPage(page.body, "filter-expression-shown") != "data.amount > 100.0" || inPage(page.body, "transform-shown") != chatTransform ||
		!strings.Contains(page.body, `value="delivery:`+d+`"`) {
		t.Fatalf("the subscription's page:\n%s", page.body)
	}
	edit := url.Values{"csrf": {csrf}, "url": {rc.URL + "/chat"}, "event_types": {"order.created"},
		"filter_expression": {"data.amount > 100.0"}, "transform": {chatTransform}, "preview_from": {"delivery:" + d}}
	if p := n.post("/portal/subscriptions/"+sub+"/preview", ck, edit); p.status != http.StatusOK || inPage(p.body, "preview-body") != shown {
		t.Fatalf("the preview of its delivery's event: %d\n%s", p.status, p.body)
	}
	if p := n.post("/portal/subscriptions/"+sub, ck, edit); p.header.Get("Location") != "/portal/subscriptions/"+sub+"?done=unchanged" {
		t.Fatalf("saving the form as it came: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
}
