package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/console"
	"github.com/herald-events/herald/internal/delivery"
)

// The portal's tests: a link made through the API, opened once; what a
// portal session reaches (its account, its subscriptions) and what it
// never does (another account's, the console, the API); its expiry, its
// forms' CSRF token and event types, and its frame-ancestors.

// portalLink makes a portal link with key for body (POST
// /v1/portal-sessions) and returns its path.
func portalLink(n *node, key string, body map[string]any) string {
	n.t.Helper()
	out := n.must(http.StatusCreated, key, "POST", "/v1/portal-sessions", body)
	u, err := url.Parse(out["url"].(string))
	if err != nil || !strings.HasPrefix(u.Path, console.PortalPrefix) {
		n.t.Fatalf("the portal link %v: %v", out["url"], err)
	}
	if exp, err := time.Parse(time.RFC3339, out["expires_at"].(string)); err != nil || exp.IsZero() {
		n.t.Fatalf("expires_at %v: %v", out["expires_at"], err)
	}
	return u.Path
}

// portalCookie returns the herald_portal cookie an answer set, or nil.
func portalCookie(p page) *http.Cookie {
	for _, line := range p.header.Values("Set-Cookie") {
		if c, err := http.ParseSetCookie(line); err == nil && c.Name == console.PortalCookieName {
			return c
		}
	}
	return nil
}

// openPortal opens the link and returns the portal cookie it sets,
// failing the test unless it sends the browser to the subscriptions.
func openPortal(n *node, link string) *http.Cookie {
	n.t.Helper()
	p := n.get(link, nil)
	c := portalCookie(p)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/portal/subscriptions" || c == nil {
		n.t.Fatalf("opening %s: %d to %q, cookie %v\n%s", link, p.status, p.header.Get("Location"), c, p.body)
	}
	if !c.HttpOnly || c.Path != console.PortalPrefix || c.SameSite != http.SameSiteLaxMode || c.MaxAge <= 0 {
		n.t.Fatalf("the portal cookie: %+v", c)
	}
	return &http.Cookie{Name: c.Name, Value: c.Value}
}

// TestPortalLinkOpensOnce: a link opens a session once; a second open is
// a 410 page saying it was used or expired, and sets no cookie; the
// session's cookie opens its account's subscriptions, without the
// console's navigation.
func TestPortalLinkOpensOnce(t *testing.T) {
	n := setup(t)
	ts := makeTenants(n)
	link := portalLink(n, ts.shopKey, map[string]any{})
	ck := openPortal(n, link)
	again := n.get(link, nil)
	if again.status != http.StatusGone || !strings.Contains(again.body, "used already or has expired") || portalCookie(again) != nil {
		t.Fatalf("the link opened again: %d\n%s", again.status, again.body)
	}
	p := n.get("/portal/subscriptions", ck)
	if p.status != http.StatusOK {
		t.Fatalf("the portal's subscriptions: %d\n%s", p.status, p.body)
	}
	for _, id := range ts.shopSubs {
		if !strings.Contains(p.body, `href="/portal/subscriptions/`+id+`"`) {
			t.Fatalf("the portal lists no %s:\n%s", id, p.body)
		}
	}
	showsNothingOf(t, "the portal's list", p, ts)
	if strings.Contains(p.body, "/console/subscriptions") || strings.Contains(p.body, "/console/deliveries") || strings.Contains(p.body, "sign-out") {
		t.Fatalf("the portal shows the console's navigation:\n%s", p.body)
	}
}

// TestPortalScope: a session limited to one subscription sees it only:
// the account's other subscription, another account's subscription and
// delivery are 404 pages to read and to change (nothing changes); it may
// make no subscription; its cookie opens no console page (not even as
// the console's cookie) and no API route.
func TestPortalScope(t *testing.T) {
	n := setup(t)
	ts := makeTenants(n)
	rc := newReceiver(t)
	rivalHook := n.subscribe(ts.rivalKey, "rival-hook", rc.URL+"/ok")
	n.publish(ts.rivalKey, "evt-rival")
	eventually(t, "the rival's delivery delivered", func() bool {
		ds := n.deliveriesOf(rivalHook)
		return len(ds) == 1 && ds[0].Status == delivery.StatusDelivered
	})
	rivalDelivery := n.deliveriesOf(rivalHook)[0].ID
	mine, other := ts.shopSubs[0], ts.shopSubs[1]
	ck := openPortal(n, portalLink(n, adminKey, map[string]any{"account_id": ts.shop, "subscription_ids": []string{mine}}))
	list := n.get("/portal/subscriptions", ck)
	if !strings.Contains(list.body, "/portal/subscriptions/"+mine) || strings.Contains(list.body, other) || strings.Contains(list.body, `id="create"`) {
		t.Fatalf("the limited session's list:\n%s", list.body)
	}
	csrf := csrfOf(t, n.get("/portal/subscriptions/"+mine, ck))
	for _, path := range []string{"/portal/subscriptions/" + other, "/portal/subscriptions/" + ts.rivalSub,
		"/portal/subscriptions/" + rivalHook, "/portal/deliveries/" + rivalDelivery} {
		if p := n.get(path, ck); p.status != http.StatusNotFound {
			t.Fatalf("GET %s: %d; want 404\n%s", path, p.status, p.body)
		}
	}
	before := n.must(200, ts.shopKey, "GET", "/v1/subscriptions/"+other, nil)
	for _, path := range []string{"/portal/subscriptions/" + other, "/portal/subscriptions/" + ts.rivalSub,
		"/portal/subscriptions/" + other + "/rotate", "/portal/subscriptions/" + rivalHook + "/test",
		"/portal/subscriptions/" + ts.rivalSub + "/secret", "/portal/deliveries/" + rivalDelivery + "/redeliver"} {
		p := n.post(path, ck, url.Values{"csrf": {csrf}, "url": {"https://evil.example/x"}})
		if p.status != http.StatusNotFound || strings.Contains(p.body, "whsec_") {
			t.Fatalf("POST %s: %d; want 404\n%s", path, p.status, p.body)
		}
	}
	if p := n.post("/portal/subscriptions", ck, url.Values{"csrf": {csrf}, "name": {"x"}, "url": {rc.URL}}); p.status != http.StatusForbidden {
		t.Fatalf("a limited session makes a subscription: %d\n%s", p.status, p.body)
	}
	after := n.must(200, ts.shopKey, "GET", "/v1/subscriptions/"+other, nil)
	if after["url"] != before["url"] || after["updated_at"] != before["updated_at"] {
		t.Fatalf("another subscription changed: %v; was %v", after, before)
	}
	if ds := n.deliveriesOf(rivalHook); len(ds) != 1 || ds[0].Attempts != 1 {
		t.Fatalf("the rival's deliveries: %+v", ds)
	}
	portalReachesNoOperatorPage(n, ck)
}

// portalReachesNoOperatorPage fails the test if the portal cookie (or its
// value as the console's cookie) opens a console page or an API route.
func portalReachesNoOperatorPage(n *node, ck *http.Cookie) {
	n.t.Helper()
	asConsole := &http.Cookie{Name: console.CookieName, Value: ck.Value}
	for _, c := range []*http.Cookie{ck, asConsole} {
		n.signedOut(c)
		req, _ := http.NewRequest("GET", n.url+"/v1/subscriptions", nil)
		if p := n.do(req, c); p.status != http.StatusUnauthorized {
			n.t.Fatalf("GET /v1/subscriptions with cookie %s: %d; want 401", c.Name, p.status)
		}
	}
}

// TestPortalLinkAsConsoleCookie: an unopened link's token is no console
// session either.
func TestPortalLinkAsConsoleCookie(t *testing.T) {
	n := setup(t)
	link := portalLink(n, adminKey, map[string]any{})
	token := strings.TrimPrefix(link, console.PortalPrefix)
	n.signedOut(&http.Cookie{Name: console.CookieName, Value: token})
	if p := n.get("/portal/subscriptions", &http.Cookie{Name: console.PortalCookieName, Value: token}); p.status != http.StatusForbidden {
		t.Fatalf("an unopened link's token as the portal cookie: %d; want 403", p.status)
	}
	openPortal(n, link) // still unused
}

// TestPortalExpiry: a session ends at its expiry (on the fake clock), and
// a link opened after its expiry opens nothing.
func TestPortalExpiry(t *testing.T) {
	n := setup(t)
	ck := openPortal(n, portalLink(n, adminKey, map[string]any{"ttl": "10m"}))
	late := portalLink(n, adminKey, map[string]any{"ttl": "10m"})
	n.clk.Advance(10*time.Minute - time.Millisecond)
	if p := n.get("/portal/subscriptions", ck); p.status != http.StatusOK {
		t.Fatalf("the session before its expiry: %d", p.status)
	}
	n.clk.Advance(time.Millisecond)
	if p := n.get("/portal/subscriptions", ck); p.status != http.StatusForbidden || !strings.Contains(p.body, "has ended") {
		t.Fatalf("the session at its expiry: %d; want 403\n%s", p.status, p.body)
	}
	if p := n.get(late, nil); p.status != http.StatusGone || portalCookie(p) != nil {
		t.Fatalf("a link opened at its expiry: %d; want 410", p.status)
	}
}

// TestPortalRevokedKey: revoking the key that made a link ends its
// session.
func TestPortalRevokedKey(t *testing.T) {
	n := setup(t)
	ts := makeTenants(n)
	_, keyID, key := tenantKey(n, ts.shop)
	ck := openPortal(n, portalLink(n, key, map[string]any{}))
	n.get("/portal/subscriptions", ck)
	n.must(http.StatusNoContent, adminKey, "DELETE", "/v1/keys/"+keyID, nil)
	if p := n.get("/portal/subscriptions", ck); p.status != http.StatusForbidden {
		t.Fatalf("the session after its key's revocation: %d; want 403", p.status)
	}
}

// tenantKey makes another account key of acc.
func tenantKey(n *node, acc string) (string, string, string) {
	k := n.must(201, adminKey, "POST", "/v1/keys", map[string]any{"account_id": acc, "role": "account", "name": "portal-maker"})
	return acc, k["id"].(string), k["key"].(string)
}

// TestPortalEdit: the portal edits a subscription's URL and event types;
// types outside the account's portal_event_types are refused (400 naming
// event_types, nothing changed); a form without the CSRF token is a 403
// and changes nothing.
func TestPortalEdit(t *testing.T) {
	n := setup(t)
	ts := makeTenants(n)
	rc := newReceiver(t)
	n.must(200, adminKey, "PATCH", "/v1/accounts/"+ts.shop, map[string]any{"settings": map[string]any{
		"portal_event_types": []string{"order.paid", "order.refunded"}}})
	sub := ts.shopSubs[1]
	ck := openPortal(n, portalLink(n, ts.shopKey, map[string]any{}))
	page := n.get("/portal/subscriptions/"+sub, ck)
	if !strings.Contains(page.body, `value="order.refunded"`) {
		t.Fatalf("the form offers no portal event types:\n%s", page.body)
	}
	csrf := csrfOf(t, page)
	before := n.must(200, ts.shopKey, "GET", "/v1/subscriptions/"+sub, nil)
	for _, form := range []url.Values{
		{"csrf": {csrf}, "url": {rc.URL + "/new"}, "event_types": {"order.shipped"}},
		{"csrf": {csrf}, "url": {rc.URL + "/new"}},
		{"csrf": {csrf}, "url": {"ftp://x"}, "event_types": {"order.paid"}},
	} {
		p := n.post("/portal/subscriptions/"+sub, ck, form)
		field := "event-types"
		if form.Get("url") == "ftp://x" {
			field = "url"
		}
		if p.status != http.StatusBadRequest || !refusedField(p.body, field) || !strings.Contains(p.body, `value="`+form.Get("url")+`"`) {
			t.Fatalf("edit %v: %d; want 400 with the error beside %s and the URL typed\n%s", form, p.status, field, p.body)
		}
	}
	if p := n.post("/portal/subscriptions/"+sub, ck, url.Values{"url": {rc.URL + "/new"}, "event_types": {"order.paid"}}); p.status != http.StatusForbidden {
		t.Fatalf("an edit without the CSRF token: %d; want 403", p.status)
	}
	if p := n.post("/portal/subscriptions/"+sub, ck, url.Values{"csrf": {"forged"}, "url": {rc.URL + "/new"}}); p.status != http.StatusForbidden {
		t.Fatalf("an edit with another CSRF token: %d; want 403", p.status)
	}
	if after := n.must(200, ts.shopKey, "GET", "/v1/subscriptions/"+sub, nil); after["updated_at"] != before["updated_at"] {
		t.Fatalf("refused edits changed the subscription: %v", after)
	}
	p := n.post("/portal/subscriptions/"+sub, ck, url.Values{"csrf": {csrf}, "url": {rc.URL + "/new"}, "event_types": {"order.paid", "order.refunded"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("the edit: %d\n%s", p.status, p.body)
	}
	after := n.must(200, ts.shopKey, "GET", "/v1/subscriptions/"+sub, nil)
	if after["url"] != rc.URL+"/new" || !slices.Equal(toStrings(after["event_types"]), []string{"order.paid", "order.refunded"}) {
		t.Fatalf("after the edit: %v", after)
	}
}

// TestPortalFrameAncestors: portal pages send the account's
// portal_frame_ancestors as CSP frame-ancestors (and no X-Frame-Options);
// without them, and on console pages always, frame-ancestors is 'none'.
func TestPortalFrameAncestors(t *testing.T) {
	n := setup(t)
	ts := makeTenants(n)
	plain := openPortal(n, portalLink(n, ts.rivalKey, map[string]any{}))
	n.must(200, adminKey, "PATCH", "/v1/accounts/"+ts.shop, map[string]any{"settings": map[string]any{
		"portal_frame_ancestors": []string{"https://app.example.com", "https://*.shop.example:8443"}}})
	framed := openPortal(n, portalLink(n, ts.shopKey, map[string]any{}))
	p := n.get("/portal/subscriptions", framed)
	if csp := p.header.Get("Content-Security-Policy"); !strings.HasSuffix(csp, "frame-ancestors https://app.example.com https://*.shop.example:8443") ||
		p.header.Get("X-Frame-Options") != "" {
		t.Fatalf("the framed account's headers: %v", p.header)
	}
	for name, pg := range map[string]page{"another account's portal": n.get("/portal/subscriptions", plain),
		"the console": n.get("/console/login", nil), "a bad link": n.get("/portal/nope", nil)} {
		if pg.header.Get("Content-Security-Policy") != console.ContentSecurityPolicy || pg.header.Get("X-Frame-Options") != "DENY" {
			t.Fatalf("%s's headers: %v", name, pg.header)
		}
	}
	for _, bad := range []string{"https://app.example.com/path", "javascript:x", "https://a.example; script-src *", "'self'"} {
		status, out := n.api(adminKey, "PATCH", "/v1/accounts/"+ts.shop, map[string]any{"settings": map[string]any{
			"portal_frame_ancestors": []string{bad}}})
		if status != http.StatusBadRequest || out["field"] != "settings.portal_frame_ancestors[0]" {
			t.Fatalf("portal_frame_ancestors %q: %d %v", bad, status, out)
		}
	}
}

// TestPortalSessionBadInput: POST /v1/portal-sessions refuses, naming the
// field and making nothing: a ttl out of range, a subscription of another
// account or unknown, an unknown account; an account key may not name
// another account.
func TestPortalSessionBadInput(t *testing.T) {
	n := setup(t)
	ts := makeTenants(n)
	for _, c := range []struct {
		key    string
		body   map[string]any
		status int
		field  string
	}{
		{ts.shopKey, map[string]any{"ttl": "4m"}, 400, "ttl"},
		{ts.shopKey, map[string]any{"ttl": "25h"}, 400, "ttl"},
		{ts.shopKey, map[string]any{"subscription_ids": []string{ts.shopSubs[0], ts.rivalSub}}, 400, "subscription_ids[1]"},
		{ts.shopKey, map[string]any{"subscription_ids": []string{"sub_nope"}}, 400, "subscription_ids[0]"},
		{ts.shopKey, map[string]any{"subscription_ids": []string{ts.shopSubs[0], ts.shopSubs[0]}}, 400, "subscription_ids[1]"},
		{adminKey, map[string]any{"account_id": "acc_nope"}, 404, "account_id"},
		{ts.shopKey, map[string]any{"account_id": ts.rival}, 403, ""},
		{ts.shopKey, map[string]any{"tll": "1h"}, 400, "tll"},
	} {
		status, out := n.api(c.key, "POST", "/v1/portal-sessions", c.body)
		if status != c.status || c.field != "" && out["field"] != c.field {
			t.Fatalf("%v: %d %v; want %d naming %q", c.body, status, out, c.status, c.field)
		}
	}
	if n, err := n.srv.Store.DeleteIdleSessions(context.Background(), start.Add(48*time.Hour)); err != nil || n != 0 {
		t.Fatalf("sessions stored after refusals: %d, %v", n, err)
	}
}

// TestPortalCreateAndRedeliver: a session of the whole account makes a
// subscription (its event types within portal_event_types; another type
// is refused and makes nothing), opens a delivery of it with its attempts
// and redelivers it.
func TestPortalCreateAndRedeliver(t *testing.T) {
	n := setup(t)
	ts := twoTenants(n)
	rc := newReceiver(t)
	n.must(200, adminKey, "PATCH", "/v1/accounts/"+ts.shop, map[string]any{"settings": map[string]any{
		"portal_event_types": []string{"order.paid"}}})
	ck := openPortal(n, portalLink(n, ts.shopKey, map[string]any{}))
	csrf := csrfOf(t, n.get("/portal/subscriptions", ck))
	bad := n.post("/portal/subscriptions", ck, url.Values{"csrf": {csrf}, "name": {"hooks"}, "url": {rc.URL + "/ok"}, "event_types": {"order.lost"}})
	if bad.status != http.StatusBadRequest || !refusedField(bad.body, "event-types") || !strings.Contains(bad.body, `value="hooks"`) {
		t.Fatalf("a subscription of another type: %d\n%s", bad.status, bad.body)
	}
	if subs := n.must(200, ts.shopKey, "GET", "/v1/subscriptions", nil)["data"].([]any); len(subs) != 0 {
		t.Fatalf("a refused form made %v", subs)
	}
	p := n.post("/portal/subscriptions", ck, url.Values{"csrf": {csrf}, "name": {"hooks"}, "url": {rc.URL + "/ok"}, "event_types": {"order.paid"}})
	sub := strings.TrimSuffix(strings.TrimPrefix(p.header.Get("Location"), "/portal/subscriptions/"), "?done=created")
	if p.status != http.StatusSeeOther || !strings.HasPrefix(sub, "sub_") {
		t.Fatalf("creating: %d to %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	if got := n.must(200, ts.shopKey, "GET", "/v1/subscriptions/"+sub, nil); got["url"] != rc.URL+"/ok" || !slices.Equal(toStrings(got["event_types"]), []string{"order.paid"}) {
		t.Fatalf("the subscription made: %v", got)
	}
	n.publish(ts.shopKey, "evt-portal")
	eventually(t, "the delivery delivered", func() bool {
		ds := n.deliveriesOf(sub)
		return len(ds) == 1 && ds[0].Status == delivery.StatusDelivered
	})
	d := n.deliveriesOf(sub)[0].ID
	if pg := n.get("/portal/deliveries/"+d, ck); pg.status != http.StatusOK || !strings.Contains(pg.body, `id="attempts"`) ||
		!strings.Contains(pg.body, "<dd>1 (1 of this budget") {
		t.Fatalf("the delivery's page: %d\n%s", pg.status, pg.body)
	}
	if p := n.post("/portal/deliveries/"+d+"/redeliver", ck, url.Values{"csrf": {csrf}}); p.status != http.StatusSeeOther ||
		p.header.Get("Location") != "/portal/deliveries/"+d+"?redeliver=done" {
		t.Fatalf("redeliver: %d to %q", p.status, p.header.Get("Location"))
	}
	eventually(t, "the redelivery", func() bool { return n.delivery(d).Attempts == 2 })
}

// TestPortalEditKeepsURLSecrets: the portal shows a URL's secret (a
// password, or a token as the user name) as xxxxx, in its list and on the
// subscription's page and form; the form sent back with the URL as shown
// keeps the stored URL and its secret, and one showing xxxxx for another
// URL is refused (400 naming url), changing nothing.
func TestPortalEditKeepsURLSecrets(t *testing.T) {
	n := setup(t)
	rc := newReceiver(t)
	host := strings.TrimPrefix(rc.URL, "http://")
	for _, c := range []struct{ name, with, shown string }{
		{"password", "http://usr:s3cret@" + host + "/hook", "http://usr:xxxxx@" + host + "/hook"},
		{"token", "http://S3CRETTOKEN@" + host + "/hook", "http://xxxxx@" + host + "/hook"},
	} {
		sub := n.must(201, adminKey, "POST", "/v1/subscriptions", map[string]any{"name": c.name, "url": c.with})["id"].(string)
		ck := openPortal(n, portalLink(n, adminKey, map[string]any{"subscription_ids": []string{sub}}))
		list, form := n.get("/portal/subscriptions", ck), n.get("/portal/subscriptions/"+sub, ck)
		for _, p := range []page{list, form} {
			if strings.Contains(p.body, "s3cret") || strings.Contains(p.body, "S3CRETTOKEN") || !strings.Contains(p.body, c.shown) {
				t.Fatalf("the portal shows %s; want it as %s:\n%s", c.with, c.shown, p.body)
			}
		}
		if !strings.Contains(form.body, `value="`+c.shown+`"`) {
			t.Fatalf("the form's url is not %s:\n%s", c.shown, form.body)
		}
		csrf := csrfOf(t, form)
		masked := strings.Replace(c.shown, "/hook", "/other", 1)
		if p := n.post("/portal/subscriptions/"+sub, ck, url.Values{"csrf": {csrf}, "url": {masked}}); p.status != http.StatusBadRequest ||
			!refusedField(p.body, "url") {
			t.Fatalf("an edit to %s: %d; want 400 naming url\n%s", masked, p.status, p.body)
		}
		if p := n.post("/portal/subscriptions/"+sub, ck, url.Values{"csrf": {csrf}, "url": {c.shown}}); p.status != http.StatusSeeOther {
			t.Fatalf("the edit: %d\n%s", p.status, p.body)
		}
		stored, err := n.srv.Store.GetSubscription(context.Background(), sub)
		if err != nil || stored.URL != c.with {
			t.Fatalf("after the edit with the URL as shown the store holds %q (%v); want %q", stored.URL, err, c.with)
		}
	}
}

// refusedField reports whether a refused form's page marks the input of
// id invalid and shows the problem beside it (the "field-error"
// template, right after the input or the fieldset).
func refusedField(body, id string) bool {
	return regexp.MustCompile(`id="` + regexp.QuoteMeta(id) + `"[^>]*aria-invalid="true"[^>]*>(?s:.*?)<span class="error field-error" role="alert">`).MatchString(body)
}
