package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestStageFourFormsIsolated walks the forms the fourth stage added, as a
// class: every one (the console's sources, event types and subscription
// previews, the portal's previews) refuses a POST without the session's
// CSRF token or with another session's (403, nothing changed), as the
// older forms do; an account key's session gets the 404 page for the
// catalog's and the sources' writes; and neither an account key's console
// session nor a portal session previews another account's subscription
// (404, its name not shown) or the event of another account's delivery
// (refused beside the choice, its id and data not shown, in the words a
// delivery that does not exist gets).
func TestStageFourFormsIsolated(t *testing.T) {
	n := setup(t)
	ts := twoTenants(n)
	rc := newReceiver(t)
	n.must(http.StatusCreated, adminKey, "POST", "/v1/event-types", map[string]any{"name": "x.type",
		"examples": []json.RawMessage{json.RawMessage(`{"n": 1}`)}})
	src := newSourceAPI(n, map[string]any{"name": "orders", "type": "nats", "url": deadURL, "subject": "orders.>"})["id"].(string)
	shopSub := n.subscribe(ts.shopKey, "shop-sub", rc.URL+"/ok")
	rivalSub := n.subscribe(ts.rivalKey, "rival-secret-sub", rc.URL+"/ok")
	n.must(http.StatusAccepted, ts.rivalKey, "POST", "/v1/events", map[string]any{"specversion": "1.0", "id": "rival-secret-event",
		"source": "/rival", "type": "x.type", "data": map[string]any{"rival": "rival-secret-data"}})
	eventually(t, "the rival's delivery", func() bool { return len(n.deliveriesOf(rivalSub)) == 1 })
	rivalDelivery := n.deliveriesOf(rivalSub)[0].ID

	typeBefore, _ := json.Marshal(n.must(http.StatusOK, adminKey, "GET", "/v1/event-types/x.type", nil))
	srcBefore, shopBefore := sourceJSON(n, src), subJSON(n, ts.shopKey, shopSub)
	admin, otherAdmin := signInAs(n, adminKey), signInAs(n, adminKey)
	fields := url.Values{"name": {"changed"}, "url": {rc.URL + "/changed"}, "type": {"nats"}, "subject": {"changed"},
		"schema": {`{"type": "object"}`}, "preview_event": {`{}`}}
	for _, path := range []string{"/console/subscriptions/new/preview", "/console/subscriptions/" + shopSub + "/preview",
		"/console/sources/new", "/console/sources/" + src + "/edit", "/console/sources/" + src + "/pause",
		"/console/sources/" + src + "/resume", "/console/sources/" + src + "/delete",
		"/console/event-types", "/console/event-types/x.type/versions", "/console/event-types/x.type/archive"} {
		for _, token := range []string{"", otherAdmin.csrf} {
			form := url.Values{"csrf": {token}}
			for k, v := range fields {
				form[k] = v
			}
			if p := n.post(path, admin.cookie, form); p.status != http.StatusForbidden {
				t.Errorf("POST %s with CSRF %q: %d; want 403", path, token, p.status)
			}
		}
	}

	shop := signInAs(n, ts.shopKey)
	for _, path := range []string{"/console/event-types", "/console/event-types/x.type/versions", "/console/event-types/x.type/archive",
		"/console/sources/" + src + "/resume"} {
		if p := shop.post(path, map[string]string{"name": "y.type", "schema": `{"type": "object"}`}); p.status != http.StatusNotFound {
			t.Errorf("an account key's POST %s: %d; want the 404 page\n%s", path, p.status, p.body)
		}
	}
	preview := map[string]string{"name": "shop-sub", "url": rc.URL + "/ok", "preview_event": `{}`}
	if p := shop.post("/console/subscriptions/"+rivalSub+"/preview", preview); p.status != http.StatusNotFound ||
		strings.Contains(p.body, "rival-secret") {
		t.Errorf("an account key's preview of another account's subscription: %d\n%s", p.status, p.body)
	}

	ck := openPortal(n, portalLink(n, ts.shopKey, map[string]any{}))
	portalCSRF := csrfOf(t, n.get("/portal/subscriptions", ck))
	for _, path := range []string{"/portal/subscriptions/preview", "/portal/subscriptions/" + shopSub + "/preview"} {
		for _, token := range []string{"", admin.csrf} {
			if p := n.post(path, ck, url.Values{"csrf": {token}, "url": {rc.URL + "/ok"}, "preview_event": {`{}`}}); p.status != http.StatusForbidden {
				t.Errorf("the portal's POST %s with CSRF %q: %d; want 403", path, token, p.status)
			}
		}
	}
	if p := n.post("/portal/subscriptions/"+rivalSub+"/preview", ck, url.Values{"csrf": {portalCSRF}, "url": {rc.URL + "/ok"},
		"preview_event": {`{}`}}); p.status != http.StatusNotFound || strings.Contains(p.body, "rival-secret") {
		t.Errorf("a portal preview of another account's subscription: %d\n%s", p.status, p.body)
	}
	answers := map[string]string{}
	for _, d := range []string{rivalDelivery, "dlv_00000000000000000000000000"} {
		p := n.post("/portal/subscriptions/"+shopSub+"/preview", ck, url.Values{"csrf": {portalCSRF}, "url": {rc.URL + "/ok"},
			"preview_from": {"delivery:" + d}})
		if p.status != http.StatusBadRequest || !refusedField(p.body, "preview_from") || strings.Contains(p.body, "rival-secret") {
			t.Errorf("a portal preview of the delivery %s: %d\n%s", d, p.status, p.body)
		}
		answers[d] = strings.ReplaceAll(fieldError.FindString(p.body), d, "<id>")
	}
	if a, b := answers[rivalDelivery], answers["dlv_00000000000000000000000000"]; a != b || a == "" {
		t.Errorf("another account's delivery is refused as %q, one that does not exist as %q", a, b)
	}

	if after, _ := json.Marshal(n.must(http.StatusOK, adminKey, "GET", "/v1/event-types/x.type", nil)); string(after) != string(typeBefore) {
		t.Errorf("a refused form changed the event type:\n%s\n%s", typeBefore, after)
	}
	if after := sourceJSON(n, src); after != srcBefore || sourceCount(n) != 1 {
		t.Errorf("a refused form changed the sources:\n%s\n%s", srcBefore, after)
	}
	if after := subJSON(n, ts.shopKey, shopSub); after != shopBefore || countOf(n, ts.shopKey) != 1 {
		t.Errorf("a refused form changed the shop's subscriptions:\n%s\n%s", shopBefore, after)
	}
}

// fieldError is a refused form's first problem beside its field.
var fieldError = regexp.MustCompile(`(?s)<span class="error field-error" role="alert">.*?</span>`)
