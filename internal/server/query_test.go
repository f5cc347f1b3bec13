package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSubscriptionByName: GET /v1/subscriptions?name= finds the account's
// subscription of that name exactly, the same name in another account
// being that account's; a subscription path with a name in it answers 404
// pointing to ?name=, and the path it points to finds the subscription.
func TestSubscriptionByName(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusOK))
	x := newTenant(b, "x")
	mine := b.subscribe(map[string]any{"name": "billing", "url": rc.URL})
	b.subscribe(map[string]any{"name": "billing-eu", "url": rc.URL})
	var theirs struct{ ID string }
	if code, raw := b.doAs(x.accountKey, "POST", "/v1/subscriptions", map[string]any{"name": "billing", "url": rc.URL}, &theirs); code != http.StatusCreated {
		t.Fatalf("x's subscription: %d %s", code, raw)
	}
	type page struct {
		Data []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"data"`
		Next string `json:"next_cursor"`
	}
	list := func(key, query string) []string {
		t.Helper()
		var p page
		if code, raw := b.doAs(key, "GET", "/v1/subscriptions?"+query, nil, &p); code != http.StatusOK || p.Next != "" {
			t.Fatalf("?%s: %d %s", query, code, raw)
		}
		var ids []string
		for _, s := range p.Data {
			ids = append(ids, s.ID)
		}
		return ids
	}
	for _, c := range []struct {
		who, key, query string
		want            []string
	}{
		{"the admin", adminKey, "name=billing", []string{mine}},
		{"x", x.accountKey, "name=billing", []string{theirs.ID}},
		{"the admin in x", adminKey, "name=billing&account_id=" + x.id, []string{theirs.ID}},
		{"the admin", adminKey, "name=Billing", nil},
		{"the admin", adminKey, "name=billing-e", nil},
		{"the admin", adminKey, "name=billing&limit=1&cursor=" + mine, nil},
	} {
		if got := list(c.key, c.query); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s, ?%s: %v, want %v", c.who, c.query, got, c.want)
		}
	}

	// A name in a subscription's path: the 404 points to ?name=, which
	// finds it.
	p := problemOf(t, b, "GET", "/v1/subscriptions/billing", nil, http.StatusNotFound)
	detail, _ := p["detail"].(string)
	_, pointed, ok := strings.Cut(detail, "GET ")
	if !ok || !strings.Contains(detail, "not a subscription id") {
		t.Fatalf("GET /v1/subscriptions/billing: %v; want a 404 pointing to ?name=", p)
	}
	u, err := url.Parse(pointed)
	if err != nil || u.Path != "/v1/subscriptions" {
		t.Fatalf("the 404 points to %q", pointed)
	}
	if got := list(adminKey, u.RawQuery); len(got) != 1 || got[0] != mine {
		t.Errorf("following the 404's pointer %q: %v, want %s", pointed, got, mine)
	}
}

// TestListFiltersRefuseNames: a list filter that takes a subscription id
// refuses a name (400 naming it, pointing to ?name=), and an unknown
// parameter or a near miss of one is refused on every list; nothing
// changes.
func TestListFiltersRefuseNames(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusOK))
	b.subscribe(map[string]any{"name": "billing", "url": rc.URL})
	var cases []refusal
	for _, list := range []string{"/v1/deliveries", "/v1/dead-letters"} {
		cases = append(cases,
			refusal{name: list + " by name", method: "GET", path: list + "?subscription_id=billing", field: "subscription_id",
				detail: "takes a subscription id, and \"billing\" is not one (subscription ids are sub_ and 26 characters); to find a subscription by its name: GET /v1/subscriptions?name=billing"},
			refusal{name: list + " ?subscription=", method: "GET", path: list + "?subscription=billing", field: "subscription", detail: "did you mean subscription_id?"},
		)
	}
	for _, list := range []string{"/v1/subscriptions", "/v1/deliveries", "/v1/dead-letters", "/v1/keys", "/v1/accounts"} {
		cases = append(cases, refusal{name: list + " unknown", method: "GET", path: list + "?state=disabled", field: "state", detail: "unknown query parameter"})
	}
	cases = append(cases,
		refusal{name: "event", method: "GET", path: "/v1/deliveries?event=e1", field: "event", detail: "did you mean event_id?"},
		refusal{name: "status", method: "GET", path: "/v1/deliveries?status=failed", field: "status", detail: "must be one of pending, delivered, dead_lettered, dropped, queued"},
		refusal{name: "endpoint state", method: "GET", path: "/v1/endpoints?state=off", field: "state", detail: `must be one of enabled, probation, disabled, frozen, not "off"`},
		refusal{name: "redrive by name", method: "POST", path: "/v1/dead-letters/redrive", body: `{"subscription_id":"billing"}`,
			code: http.StatusNotFound, field: "subscription_id", detail: "GET /v1/subscriptions?name=billing"},
	)
	refuseAll(t, b, cases)
}

// TestRedriveByIDsAlone: POST /v1/dead-letters/redrive with ids and no
// subscription_id redrives those of the ids that are the account's dead
// letters, whichever of its subscriptions they belong to; another
// account's are left as they are.
func TestRedriveByIDsAlone(t *testing.T) {
	b := setup(t)
	rc, failing := switchable(t, http.StatusNotFound, true)
	x := newTenant(b, "x")
	a := b.subscribe(map[string]any{"name": "a", "url": rc.URL})
	c := b.subscribe(map[string]any{"name": "c", "url": rc.URL})
	var xs struct{ ID string }
	if code, raw := b.doAs(x.accountKey, "POST", "/v1/subscriptions", map[string]any{"name": "a", "url": rc.URL}, &xs); code != http.StatusCreated {
		t.Fatalf("x's subscription: %d %s", code, raw)
	}
	b.publish("e1", "t")
	ev := map[string]any{"specversion": "1.0", "id": "e1", "source": "/test", "type": "t"}
	if code, raw := b.doAs(x.pubKey, "POST", "/v1/events", ev, nil); code != http.StatusAccepted {
		t.Fatalf("x's publish: %d %s", code, raw)
	}
	dead := map[string]string{} // subscription → its dead letter
	eventually(t, "three dead letters", func() bool {
		for _, s := range []struct{ key, sub string }{{adminKey, a}, {adminKey, c}, {x.accountKey, xs.ID}} {
			var out struct{ Data []delivery }
			b.doAs(s.key, "GET", "/v1/deliveries?subscription_id="+s.sub, nil, &out)
			if len(out.Data) != 1 || out.Data[0].Status != "dead_lettered" {
				return false
			}
			dead[s.sub] = out.Data[0].ID
		}
		return true
	})
	// A subscription filter naming another account's subscription lists
	// nothing of it (the account's condition stays when the subscription
	// is not the caller's; see api's listAccount).
	for _, path := range []string{"/v1/deliveries?subscription_id=", "/v1/dead-letters?subscription_id="} {
		var out struct{ Data []map[string]any }
		if code, raw := b.doAs(x.accountKey, "GET", path+a, nil, &out); code != http.StatusOK || len(out.Data) != 0 {
			t.Fatalf("x lists %s%s (another account's): %d %s; want 200 and nothing", path, a, code, raw)
		}
		if code, raw := b.doAs(x.accountKey, "GET", path+xs.ID, nil, &out); code != http.StatusOK || len(out.Data) != 1 {
			t.Fatalf("x lists %s%s (its own): %d %s; want its dead letter", path, xs.ID, code, raw)
		}
	}
	failing.Store(false)
	redrive := func(key string, ids []string, want int) {
		t.Helper()
		var out struct{ Redriven int }
		if code, raw := b.doAs(key, "POST", "/v1/dead-letters/redrive", map[string]any{"ids": ids}, &out); code != http.StatusAccepted || out.Redriven != want {
			t.Fatalf("redrive %v: %d %s; want 202 and %d redriven", ids, code, raw, want)
		}
	}
	redrive(adminKey, []string{dead[a], dead[c], dead[xs.ID]}, 2)
	redrive(x.accountKey, []string{dead[a], dead[c]}, 0) // not x's
	b.waitDelivery(a, "delivered", func(d delivery) bool { return d.Status == "delivered" })
	b.waitDelivery(c, "delivered", func(d delivery) bool { return d.Status == "delivered" })
	var d delivery
	if code, raw := b.doAs(x.accountKey, "GET", "/v1/deliveries/"+dead[xs.ID], nil, &d); code != http.StatusOK || d.Status != "dead_lettered" {
		t.Fatalf("x's dead letter after another account's redrive: %d %s", code, raw)
	}
	redrive(x.accountKey, []string{dead[xs.ID]}, 1)
	eventually(t, "x's delivered", func() bool {
		b.doAs(x.accountKey, "GET", "/v1/deliveries/"+dead[xs.ID], nil, &d)
		return d.Status == "delivered"
	})
	redrive(adminKey, []string{}, 0)
	if p := problemOf(t, b, "POST", "/v1/dead-letters/redrive", map[string]any{"ids": nil}, http.StatusBadRequest); p["field"] != "subscription_id" {
		t.Errorf("redrive without subscription_id or ids: %v", p)
	}
}
