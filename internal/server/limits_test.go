package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/server"
)

// TestSubscriptionLimitPerAccount: with --max-subscriptions-per-account 3,
// an account's fourth create answers 409 naming the limit and the flag,
// and stores nothing; another account is not affected, and a delete makes
// room for one more.
func TestSubscriptionLimitPerAccount(t *testing.T) {
	b := setup(t, func(c *server.Config) { c.MaxSubscriptionsPerAccount = 3 })
	a, other := newTenant(b, "a"), newTenant(b, "other")
	create := func(tn tenant, name string) (int, []byte) {
		return b.doAs(tn.accountKey, "POST", "/v1/subscriptions",
			map[string]any{"name": name, "delivery_mode": "pull", "event_types": []string{"x"}}, nil)
	}
	var first string
	for i := range 3 {
		var sub struct{ ID string }
		if code, raw := b.doAs(a.accountKey, "POST", "/v1/subscriptions",
			map[string]any{"name": fmt.Sprint("s", i), "delivery_mode": "pull", "event_types": []string{"x"}}, &sub); code != http.StatusCreated {
			t.Fatalf("create %d: %d %s", i, code, raw)
		}
		if first == "" {
			first = sub.ID
		}
	}
	p := problemOf(t, b, "POST", "/v1/subscriptions?account_id="+a.id,
		map[string]any{"name": "fourth", "delivery_mode": "pull", "event_types": []string{"x"}}, http.StatusConflict)
	if p["type"] != "urn:herald:problem:limit-reached" || !strings.Contains(p["detail"].(string), "3 subscriptions") ||
		!strings.Contains(p["detail"].(string), "--max-subscriptions-per-account") {
		t.Fatalf("problem %v: want limit-reached naming 3 and --max-subscriptions-per-account", p)
	}
	var list struct{ Data []struct{ Name string } }
	if code, raw := b.doAs(a.accountKey, "GET", "/v1/subscriptions?limit=100", nil, &list); code != 200 || len(list.Data) != 3 {
		t.Fatalf("list: %d %s; want the 3 created", code, raw)
	}
	if code, raw := create(other, "s0"); code != http.StatusCreated {
		t.Fatalf("another account's create: %d %s", code, raw)
	}
	if code, raw := b.doAs(a.accountKey, "DELETE", "/v1/subscriptions/"+first, nil, nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, raw)
	}
	if code, raw := create(a, "fourth"); code != http.StatusCreated {
		t.Fatalf("a create after a delete: %d %s", code, raw)
	}
}

// TestFanoutLimit: with --max-fanout 5 and three subscriptions matching,
// a publish of two events (six deliveries) answers 413 naming the limit and
// the flag, and stores nothing (the same events published one at a time
// afterwards are not duplicates); one event (three deliveries) passes.
func TestFanoutLimit(t *testing.T) {
	b := setup(t, func(c *server.Config) { c.MaxFanout = 5 })
	var subs []string
	for i := range 3 {
		subs = append(subs, b.subscribe(map[string]any{"name": fmt.Sprint("s", i), "delivery_mode": "pull", "event_types": []string{"x"}}))
	}
	ev := func(id string) map[string]any {
		return map[string]any{"specversion": "1.0", "id": id, "source": "/fan", "type": "x"}
	}
	p := problemOf(t, b, "POST", "/v1/events", []map[string]any{ev("e1"), ev("e2")}, http.StatusRequestEntityTooLarge)
	if p["type"] != "urn:herald:problem:payload-too-large" || !strings.Contains(p["detail"].(string), "more than 5 deliveries") ||
		!strings.Contains(p["detail"].(string), "--max-fanout") {
		t.Fatalf("problem %v: want payload-too-large naming 5 and --max-fanout", p)
	}
	for _, sub := range subs {
		if ds := b.deliveries(sub); len(ds) != 0 {
			t.Fatalf("subscription %s has %d deliveries after the refused publish", sub, len(ds))
		}
	}
	for _, id := range []string{"e1", "e2"} {
		var res struct {
			Events []struct {
				Duplicate  bool
				Deliveries int
			}
		}
		if code, raw := b.do("POST", "/v1/events", ev(id), &res); code != http.StatusAccepted || res.Events[0].Duplicate || res.Events[0].Deliveries != 3 {
			t.Fatalf("publish %s alone: %d %s; want 202, not a duplicate, 3 deliveries", id, code, raw)
		}
	}
}
