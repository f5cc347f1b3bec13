package server_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// tenant is an account with a key of each role, made through the API.
type tenant struct {
	id                   string
	accountKey, pubKey   string
	accountKeyID, pubKID string
}

// newTenant creates an account and its account and publish keys as the
// admin.
func newTenant(b *bundle, name string) tenant {
	b.t.Helper()
	var acc struct{ ID string }
	if code, raw := b.do("POST", "/v1/accounts", map[string]any{"name": name}, &acc); code != http.StatusCreated {
		b.t.Fatalf("create account: %d %s", code, raw)
	}
	tn := tenant{id: acc.ID}
	tn.accountKey, tn.accountKeyID = newKey(b, adminKey, acc.ID, "account")
	tn.pubKey, tn.pubKID = newKey(b, adminKey, acc.ID, "publish")
	return tn
}

// newKey makes a key of role in account with the key as, and returns the
// secret and the key's id.
func newKey(b *bundle, as, account, role string) (secret, id string) {
	b.t.Helper()
	var k struct{ ID, Key, Prefix string }
	body := map[string]any{"role": role, "name": role + " key"}
	if account != "" {
		body["account_id"] = account
	}
	if code, raw := b.doAs(as, "POST", "/v1/keys", body, &k); code != http.StatusCreated {
		b.t.Fatalf("create %s key: %d %s", role, code, raw)
	}
	if !strings.HasPrefix(k.Key, "hk_") || !strings.HasPrefix(k.Key, k.Prefix) {
		b.t.Fatalf("key %+v: want an hk_ key and its prefix", k)
	}
	return k.Key, k.ID
}

// TestEveryRouteChecksKeys walks the API's route list: every route but the
// public ones answers 401 without a key and with an unknown or revoked
// one; a key whose role the route does not take gets 403; another account's
// key gets 404 for this account's resources (and lists without them); the
// right key passes. The route list is the API's own, so a new route is
// covered as soon as it exists.
func TestEveryRouteChecksKeys(t *testing.T) {
	w := newRouteWorld(t, setup(t))
	routes := w.b.srv.API.Routes()
	if len(routes) < 25 {
		t.Fatalf("only %d routes listed", len(routes))
	}
	for _, rt := range routes {
		w.checkRoute(rt.Pattern, rt.Access)
	}
	w.checkListsOfY()
	w.checkAccountBounds()
	w.checkDeletes()
}

// routeWorld is what TestEveryRouteChecksKeys tries the routes on: tenants
// x and y, x's subscription with a dead-lettered delivery, the event x
// published, and a revoked publish key of x.
type routeWorld struct {
	t    *testing.T
	b    *bundle
	x, y tenant
	sub  struct {
		ID         string `json:"id"`
		EndpointID string `json:"endpoint_id"`
	}
	dl      delivery
	job     string // x's recover, of nothing (since far ahead)
	src     string // a source (admin routes), of a broker that refuses connections
	ev      map[string]any
	revoked string
	access  map[string]string // of each route pattern
}

// newRouteWorld makes the tenants, x's subscription to a receiver that
// fails, x's event (waiting until its delivery is dead-lettered) and the
// revoked key.
func newRouteWorld(t *testing.T, b *bundle) *routeWorld {
	w := &routeWorld{t: t, b: b, x: newTenant(b, "x"), y: newTenant(b, "y"), access: map[string]string{}}
	for _, rt := range b.srv.API.Routes() {
		w.access[rt.Pattern] = rt.Access
	}
	rc := newReceiver(t, status(500))
	if code, raw := b.doAs(w.x.accountKey, "POST", "/v1/subscriptions",
		map[string]any{"name": "x-sub", "url": rc.URL, "retry_policy": map[string]any{"preset": "eventgrid", "max_attempts": 1}}, &w.sub); code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	w.ev = map[string]any{"specversion": "1.0", "id": "e1", "source": "/x", "type": "t"}
	if code, raw := b.doAs(w.x.pubKey, "POST", "/v1/events", w.ev, nil); code != http.StatusAccepted {
		t.Fatalf("publish: %d %s", code, raw)
	}
	eventually(t, "the delivery dead-lettered", func() bool {
		var out struct{ Data []delivery }
		b.doAs(w.x.accountKey, "GET", "/v1/deliveries?subscription_id="+w.sub.ID, nil, &out)
		if len(out.Data) == 1 && out.Data[0].Status == "dead_lettered" {
			w.dl = out.Data[0]
			return true
		}
		return false
	})
	revoked, revokedID := newKey(b, w.x.accountKey, "", "publish")
	if code, raw := b.doAs(w.x.accountKey, "DELETE", "/v1/keys/"+revokedID, nil, nil); code != 204 {
		t.Fatalf("revoke: %d %s", code, raw)
	}
	w.revoked = revoked
	var j struct{ ID string }
	if code, raw := b.doAs(w.x.accountKey, "POST", "/v1/subscriptions/"+w.sub.ID+"/recover", map[string]any{"since": "2100-01-01T00:00:00Z"}, &j); code != http.StatusAccepted {
		t.Fatalf("recover: %d %s", code, raw)
	}
	w.job = j.ID
	if code, raw := b.do("POST", "/v1/event-types", map[string]any{"name": "x.type"}, nil); code != http.StatusCreated {
		t.Fatalf("create event type: %d %s", code, raw)
	}
	var src struct{ ID string }
	if code, raw := b.do("POST", "/v1/sources", map[string]any{"type": "nats", "url": "nats://127.0.0.1:1", "subject": "x"}, &src); code != http.StatusCreated {
		t.Fatalf("create source: %d %s", code, raw)
	}
	w.src = src.ID
	return w
}

// path fills a route's path parameters with account x's resources.
func (w *routeWorld) path(pattern string) string {
	_, path, _ := strings.Cut(pattern, " ")
	switch {
	case strings.HasPrefix(path, "/v1/accounts/"):
		path = strings.Replace(path, "{id}", w.x.id, 1)
	case strings.HasPrefix(path, "/v1/keys/"):
		path = strings.Replace(path, "{id}", w.x.pubKID, 1)
	case strings.HasPrefix(path, "/v1/subscriptions/"):
		path = strings.Replace(path, "{id}", w.sub.ID, 1)
	case strings.HasPrefix(path, "/v1/deliveries/"):
		path = strings.Replace(path, "{id}", w.dl.ID, 1)
	case strings.HasPrefix(path, "/v1/endpoints/"):
		path = strings.Replace(path, "{id}", w.sub.EndpointID, 1)
	case strings.HasPrefix(path, "/v1/event-types/"): // installation-wide
		path = strings.Replace(path, "{name}", "x.type", 1)
	case strings.HasPrefix(path, "/v1/jobs/"):
		path = strings.Replace(path, "{id}", w.job, 1)
	case strings.HasPrefix(path, "/v1/sources/"):
		path = strings.Replace(path, "{id}", w.src, 1)
	case strings.HasPrefix(path, "/topics/"): // Event Grid's: the topic is the account
		path = strings.Replace(strings.Replace(path, "{topic}", w.x.id, 1), "{subscription}", w.sub.ID, 1)
	}
	return path
}

// send calls the route pattern on x's resources with key, with the body it
// needs to reach its account check (an empty object for a POST or PATCH
// that takes one); the admin acts in x.
func (w *routeWorld) send(key, pattern string) (int, []byte) {
	method, _, _ := strings.Cut(pattern, " ")
	bodies := map[string]any{
		"POST /v1/dead-letters/redrive": map[string]any{"subscription_id": w.sub.ID},
		"POST /v1/events":               w.ev,
	}
	body := bodies[pattern]
	if body == nil && (method == "POST" || method == "PATCH") && !strings.HasSuffix(pattern, "/rotate") &&
		!strings.HasSuffix(pattern, "/enable") && !strings.HasSuffix(pattern, "/redeliver") {
		body = map[string]any{}
	}
	path := w.path(pattern)
	if key == adminKey && w.access[pattern] != "admin" && !strings.Contains(pattern, "{topic}") {
		path += "?account_id=" + w.x.id // the admin acts in x (an admin route takes no account; a topic names it)
	}
	if strings.HasSuffix(pattern, ":receive") {
		path += "?maxWaitTime=0" // Event Grid's receive waits 60 s by default (on the fake clock: for ever)
	}
	return w.b.doAs(key, method, path, body, nil)
}

// routeTry is one key tried on a route, and the status it must get.
type routeTry struct {
	who, key string
	want     int // 0: passes the checks (neither 401, 403 nor 404)
}

// tries are the keys to try on a route of the access given, and what each
// must get.
func (w *routeWorld) tries(pattern, access string) []routeTry {
	x, y := w.x, w.y
	switch access {
	case "publish":
		return []routeTry{{"x's publish key", x.pubKey, 0}, {"x's account key", x.accountKey, 0}, {"the admin", adminKey, 0}}
	case "account":
		tries := []routeTry{{"x's publish key", x.pubKey, 403}, {"x's account key", x.accountKey, 0}, {"the admin", adminKey, 0}}
		if strings.Contains(pattern, "{id}") || strings.Contains(pattern, "{topic}") || strings.HasSuffix(pattern, "/redrive") {
			tries = append(tries, routeTry{"y's account key", y.accountKey, 404})
		}
		return tries
	case "admin":
		return []routeTry{{"x's publish key", x.pubKey, 403}, {"x's account key", x.accountKey, 403}, {"y's account key", y.accountKey, 403}, {"the admin", adminKey, 0}}
	}
	w.t.Fatalf("%s: unknown access %q", pattern, access)
	return nil
}

// checkRoute checks one route: a public one takes no key; any other answers
// 401 without a key or with an unknown or revoked one, and each of its
// tries gets what it must (the deletes that would pass are left to
// checkDeletes).
func (w *routeWorld) checkRoute(pattern, access string) {
	t := w.t
	if access == "public" {
		// (The validation URL answers 404 for a subscription without
		// validation: not 401 either way.)
		if code, raw := w.send("", pattern); code == 401 || code == 403 || code >= 500 {
			t.Errorf("%s without a key: %d %s", pattern, code, raw)
		}
		return
	}
	for _, key := range []string{"", "hk_not-a-key", w.revoked} {
		code, raw := w.send(key, pattern)
		var p struct {
			Type  string
			Error struct{ Code string } // Event Grid's routes' form
		}
		_ = json.Unmarshal(raw, &p)
		if code != 401 || p.Type != "urn:herald:problem:unauthorized" && p.Error.Code != "Unauthorized" {
			t.Errorf("%s with key %q: %d %s, want 401", pattern, key, code, raw)
		}
	}
	for _, tr := range w.tries(pattern, access) {
		if strings.HasPrefix(pattern, "DELETE") && tr.want == 0 {
			continue // the deletes are checked below, once
		}
		code, raw := w.send(tr.key, pattern)
		switch {
		case tr.want == 0 && (code == 401 || code == 403 || code == 404):
			t.Errorf("%s as %s: %d %s, want it to pass", pattern, tr.who, code, raw)
		case tr.want != 0 && code != tr.want:
			t.Errorf("%s as %s: %d %s, want %d", pattern, tr.who, code, raw, tr.want)
		}
	}
}

// checkListsOfY: the lists of y show nothing of x's.
func (w *routeWorld) checkListsOfY() {
	for _, path := range []string{"/v1/subscriptions", "/v1/deliveries", "/v1/dead-letters", "/v1/endpoints", "/v1/keys"} {
		var out struct{ Data []map[string]any }
		if code, raw := w.b.doAs(w.y.accountKey, "GET", path, nil, &out); code != 200 {
			w.t.Fatalf("%s as y: %d %s", path, code, raw)
		}
		for _, item := range out.Data {
			if item["account_id"] != nil && item["account_id"] != w.y.id || item["id"] == w.sub.ID || item["id"] == w.dl.ID || item["id"] == w.sub.EndpointID {
				w.t.Errorf("%s as y shows x's %v", path, item["id"])
			}
		}
	}
}

// checkAccountBounds: x's account key cannot act in y, nor make an admin
// key; the admin acts in x with ?account_id=, and in acc_default without.
func (w *routeWorld) checkAccountBounds() {
	t, b, x, y := w.t, w.b, w.x, w.y
	if code, _ := b.doAs(x.accountKey, "GET", "/v1/subscriptions?account_id="+y.id, nil, nil); code != 403 {
		t.Errorf("x's key naming account y: %d, want 403", code)
	}
	if code, _ := b.doAs(x.accountKey, "POST", "/v1/keys", map[string]any{"role": "admin"}, nil); code != 403 {
		t.Errorf("x's account key making an admin key: %d, want 403", code)
	}
	if code, _ := b.doAs(x.accountKey, "POST", "/v1/keys", map[string]any{"role": "publish", "account_id": y.id}, nil); code != 403 {
		t.Errorf("x's account key making a key of y: %d, want 403", code)
	}
	var got struct{ Data []struct{ ID string } }
	if code, _ := b.do("GET", "/v1/subscriptions?account_id="+x.id, nil, &got); code != 200 || len(got.Data) != 1 || got.Data[0].ID != w.sub.ID {
		t.Errorf("admin listing x's subscriptions: %d %v", code, got.Data)
	}
	if code, _ := b.do("GET", "/v1/subscriptions", nil, &got); code != 200 || len(got.Data) != 0 {
		t.Errorf("admin listing acc_default's subscriptions: %d %v", code, got.Data)
	}
	if code, _ := b.do("GET", "/v1/subscriptions?account_id=acc_nope", nil, nil); code != 404 {
		t.Errorf("admin naming a missing account: %d, want 404", code)
	}
}

// checkDeletes: y cannot delete x's subscription or key (404 in
// checkRoute); x can; an account with subscriptions, and acc_default, are
// not deleted, an emptied one is, and its keys stop working.
func (w *routeWorld) checkDeletes() {
	t, b, x := w.t, w.b, w.x
	if code, raw := b.doAs(x.accountKey, "DELETE", "/v1/keys/"+x.pubKID, nil, nil); code != 204 {
		t.Errorf("x revoking its publish key: %d %s", code, raw)
	}
	if code, _ := b.doAs(x.pubKey, "POST", "/v1/events", w.ev, nil); code != 401 {
		t.Errorf("a revoked publish key publishes: %d, want 401", code)
	}
	if code, _ := b.do("DELETE", "/v1/accounts/"+x.id, nil, nil); code != 409 {
		t.Errorf("deleting an account with subscriptions: %d, want 409", code)
	}
	if code, raw := b.doAs(x.accountKey, "DELETE", "/v1/subscriptions/"+w.sub.ID, nil, nil); code != 204 {
		t.Errorf("x deleting its subscription: %d %s", code, raw)
	}
	if code, raw := b.do("DELETE", "/v1/accounts/"+x.id, nil, nil); code != 204 {
		t.Errorf("deleting the emptied account: %d %s", code, raw)
	}
	if code, _ := b.doAs(x.accountKey, "GET", "/v1/subscriptions", nil, nil); code != 401 {
		t.Errorf("a key of a deleted account: %d, want 401", code)
	}
	if code, _ := b.do("DELETE", "/v1/accounts/acc_default", nil, nil); code != 409 {
		t.Errorf("deleting acc_default: %d, want 409", code)
	}
	if code, raw := b.do("DELETE", "/v1/event-types/x.type", nil, nil); code != 200 {
		t.Errorf("archiving an event type: %d %s", code, raw)
	}
	if code, raw := b.do("DELETE", "/v1/sources/"+w.src, nil, nil); code != 204 {
		t.Errorf("deleting a source: %d %s", code, raw)
	}
}

// TestTenantIsolation: publishing with account X's key reaches only X's
// subscriptions; the same (source, id) in X and Y are two events, while
// repeated in X it is a duplicate; one URL in two accounts is two endpoints
// (two circuits).
func TestTenantIsolation(t *testing.T) {
	b := setup(t)
	x, y := newTenant(b, "x"), newTenant(b, "y")
	rx, ry := newReceiver(t, status(200)), newReceiver(t, status(200))
	shared := newReceiver(t, status(200))
	subOf := func(tn tenant, name, url string) (id, ep string) {
		var s struct {
			ID         string `json:"id"`
			EndpointID string `json:"endpoint_id"`
		}
		if code, raw := b.doAs(tn.accountKey, "POST", "/v1/subscriptions", map[string]any{"name": name, "url": url, "event_types": []string{"t"}}, &s); code != 201 {
			t.Fatalf("create: %d %s", code, raw)
		}
		return s.ID, s.EndpointID
	}
	// The same name in two accounts is allowed: names are per account.
	sx, _ := subOf(x, "hook", rx.URL)
	sy, _ := subOf(y, "hook", ry.URL)
	_, epx := subOf(x, "shared", shared.URL)
	_, epy := subOf(y, "shared", shared.URL)
	if epx == epy {
		t.Fatalf("one URL in two accounts shares endpoint %s", epx)
	}
	type result struct {
		Events []struct {
			Duplicate  bool
			Deliveries int
		}
	}
	publish := func(key string) result {
		var r result
		ev := map[string]any{"specversion": "1.0", "id": "same-id", "source": "/same", "type": "t"}
		if code, raw := b.doAs(key, "POST", "/v1/events", ev, &r); code != 202 {
			t.Fatalf("publish: %d %s", code, raw)
		}
		return r
	}
	if r := publish(x.pubKey); r.Events[0].Duplicate || r.Events[0].Deliveries != 2 {
		t.Fatalf("first publish in x: %+v", r)
	}
	eventually(t, "x's two deliveries", func() bool { return rx.count() == 1 && shared.count() == 1 })
	if r := publish(y.pubKey); r.Events[0].Duplicate || r.Events[0].Deliveries != 2 {
		t.Fatalf("the same (source, id) in y: %+v, want a new event with 2 deliveries", r)
	}
	if r := publish(x.pubKey); !r.Events[0].Duplicate || r.Events[0].Deliveries != 0 {
		t.Fatalf("repeated in x: %+v, want a duplicate", r)
	}
	eventually(t, "y's two deliveries", func() bool { return ry.count() == 1 && shared.count() == 2 })
	b.settle()
	if rx.count() != 1 || ry.count() != 1 {
		t.Fatalf("x's receiver got %d, y's %d; want 1 each", rx.count(), ry.count())
	}
	// Each account's delivery list holds its own one.
	for _, c := range []struct {
		tn  tenant
		sub string
	}{{x, sx}, {y, sy}} {
		var out struct{ Data []delivery }
		b.doAs(c.tn.accountKey, "GET", "/v1/deliveries?event_id=same-id", nil, &out)
		if len(out.Data) != 2 {
			t.Fatalf("account %s lists %d deliveries of same-id, want its 2", c.tn.id, len(out.Data))
		}
		for _, d := range out.Data {
			if d.SubscriptionID == sx && c.sub != sx || d.SubscriptionID == sy && c.sub != sy {
				t.Fatalf("account %s lists another account's delivery %+v", c.tn.id, d)
			}
		}
	}
	// Nothing went to acc_default.
	var none struct{ Data []delivery }
	if b.do("GET", "/v1/deliveries", nil, &none); len(none.Data) != 0 {
		t.Fatalf("acc_default lists %d deliveries", len(none.Data))
	}
}

// TestRevocationReachesAnotherNode: two nodes on one PostgreSQL database. A
// key revoked through node A stops working on A at once and on B at B's
// next auth check (1 s on its fake clock), though B had it cached.
func TestRevocationReachesAnotherNode(t *testing.T) {
	url := pgtest.SchemaURL(t)
	onPG := func(c *server.Config) { c.Store = url; c.AuthRecheck = time.Second }
	a := setup(t, onPG)
	bn := setup(t, onPG)
	secret, id := newKey(a, adminKey, "", "account")
	if code, raw := bn.doAs(secret, "GET", "/v1/subscriptions", nil, nil); code != 200 {
		t.Fatalf("node B with the new key: %d %s", code, raw)
	}
	if code, raw := a.do("DELETE", "/v1/keys/"+id, nil, nil); code != 204 {
		t.Fatalf("revoke on A: %d %s", code, raw)
	}
	if code, _ := a.doAs(secret, "GET", "/v1/subscriptions", nil, nil); code != 401 {
		t.Fatalf("node A after the revocation: %d, want 401", code)
	}
	eventually(t, "node B refusing the revoked key", func() bool {
		bn.clk.Advance(time.Second)
		code, _ := bn.doAs(secret, "GET", "/v1/subscriptions", nil, nil)
		return code == 401
	})
}

// TestFirstStartMakesAnAdminKey: without HERALD_ADMIN_KEY, the first start
// writes an admin key to <data>/admin.key (0600) that works; a restart
// keeps it and makes no other; a key file left unrenamed by a crash is
// recovered. The data directory is made 0700 at every start, and admin.key
// 0600, whatever they were.
func TestFirstStartMakesAnAdminKey(t *testing.T) {
	dir := t.TempDir()
	noEnvKey := func(c *server.Config) { c.AdminKey = ""; c.DataDir = dir }
	path := filepath.Join(dir, server.AdminKeyFile)
	private := func() {
		t.Helper()
		for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != want {
				t.Fatalf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
			}
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := setup(t, noEnvKey)
	private()
	raw, _ := os.ReadFile(path)
	key := strings.TrimSpace(string(raw))
	var ks struct{ Data []struct{ ID, Role string } }
	if code, body := b.doAs(key, "GET", "/v1/keys", nil, &ks); code != 200 || len(ks.Data) != 1 || ks.Data[0].Role != "admin" {
		t.Fatalf("the made key: %d %s", code, body)
	}
	if code, _ := b.doAs(adminKey, "GET", "/v1/keys", nil, nil); code != 401 {
		t.Fatalf("the test's admin key works without HERALD_ADMIN_KEY set: %d", code)
	}
	if b.cfg.Store != "" && b.cfg.Store != "sqlite" {
		return // on PostgreSQL the schema is the test's; the restart below is SQLite's
	}
	ctx := t.Context()
	_ = b.srv.Close(ctx)
	if err := errors.Join(os.Chmod(dir, 0o755), os.Chmod(path, 0o644)); err != nil {
		t.Fatal(err)
	}
	b2 := setup(t, noEnvKey)
	private()
	again, _ := os.ReadFile(path)
	if string(again) != string(raw) {
		t.Fatal("a restart replaced admin.key")
	}
	if code, body := b2.doAs(key, "GET", "/v1/keys", nil, &ks); code != 200 || len(ks.Data) != 1 {
		t.Fatalf("after a restart: %d %s", code, body)
	}
	// A start that stored its key and crashed before renaming its file:
	// the next start finds the file and renames it.
	if err := os.Rename(path, path+".crashed.new"); err != nil {
		t.Fatal(err)
	}
	_ = b2.srv.Close(ctx)
	setup(t, noEnvKey)
	if again, err := os.ReadFile(path); err != nil || string(again) != string(raw) {
		t.Fatalf("the stored key's file was not recovered: %v", err)
	}
}

// TestAuthOff: --auth=off takes requests without a key, as the admin.
func TestAuthOff(t *testing.T) {
	b := setup(t, func(c *server.Config) { c.Auth = server.AuthOff })
	if code, raw := b.doAs("", "GET", "/v1/accounts", nil, nil); code != 200 {
		t.Fatalf("with auth off: %d %s", code, raw)
	}
}

// TestOperationalEventsStayInTheirAccount: an endpoint of account X that
// answers 410 is disabled, one that answers 400 dead-letters, and X's
// operations subscription hears of both; acc_default's operations subscription, listing the
// same types, hears nothing.
func TestOperationalEventsStayInTheirAccount(t *testing.T) {
	b := setup(t)
	x := newTenant(b, "x")
	types := []string{"herald.endpoint.disabled", "herald.delivery.dead_lettered"}
	defaultOps := b.opsReceiver(types...)
	xOps := newReceiver(t, status(200))
	gone := newReceiver(t, status(http.StatusGone))
	bad := newReceiver(t, status(http.StatusBadRequest))
	for name, url := range map[string]string{"ops": xOps.URL, "gone": gone.URL, "bad": bad.URL} {
		body := map[string]any{"name": name, "url": url, "event_types": []string{"t"}}
		if name == "ops" {
			body["event_types"] = types
		}
		if code, raw := b.doAs(x.accountKey, "POST", "/v1/subscriptions", body, nil); code != 201 {
			t.Fatalf("create %s: %d %s", name, code, raw)
		}
	}
	ev := map[string]any{"specversion": "1.0", "id": "e1", "source": "/x", "type": "t"}
	if code, raw := b.doAs(x.pubKey, "POST", "/v1/events", ev, nil); code != 202 {
		t.Fatalf("publish: %d %s", code, raw)
	}
	eventually(t, "x's two operational events", func() bool { return xOps.count() == 2 })
	b.settle()
	got := map[string]bool{}
	for _, e := range opsEvents(t, xOps) {
		got[e["type"].(string)] = true
	}
	if !got["herald.endpoint.disabled"] || !got["herald.delivery.dead_lettered"] {
		t.Fatalf("x's operations receiver got %v", got)
	}
	if n := defaultOps.count(); n != 0 {
		t.Fatalf("acc_default's operations receiver got %d of x's events", n)
	}
}
