package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// publishEvent publishes one CloudEvent given as a map.
func publishEvent(b *bundle, ev map[string]any) {
	b.t.Helper()
	ev["specversion"] = "1.0"
	if _, ok := ev["source"]; !ok {
		ev["source"] = "/orders"
	}
	if code, raw := b.do("POST", "/v1/events", ev, nil); code != http.StatusAccepted {
		b.t.Fatalf("publish: %d %s", code, raw)
	}
}

var orderFilters = []map[string]any{
	{"operator_type": "NumberGreaterThan", "key": "data.amount", "value": 100},
	{"operator_type": "StringIn", "key": "data.region", "values": []string{"eu", "us"}},
}

// TestAdvancedFiltersMakeDeliveriesOnlyForMatches: with advanced filters,
// only the events that pass every filter make deliveries (strings in any
// case; missing keys and wrong types do not match).
func TestAdvancedFiltersMakeDeliveriesOnlyForMatches(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	sub := b.subscribe(map[string]any{"name": "big-orders", "url": rc.URL, "advanced_filters": orderFilters})
	publishEvent(b, map[string]any{"id": "match", "type": "order", "data": map[string]any{"amount": 150, "region": "EU"}})
	publishEvent(b, map[string]any{"id": "small", "type": "order", "data": map[string]any{"amount": 50, "region": "eu"}})
	publishEvent(b, map[string]any{"id": "asia", "type": "order", "data": map[string]any{"amount": 500, "region": "asia"}})
	publishEvent(b, map[string]any{"id": "no-region", "type": "order", "data": map[string]any{"amount": 500}})
	publishEvent(b, map[string]any{"id": "text-amount", "type": "order", "data": map[string]any{"amount": "500", "region": "us"}})
	publishEvent(b, map[string]any{"id": "not-json", "type": "order", "datacontenttype": "text/plain", "data": "amount=500"})
	ds := b.deliveries(sub)
	if len(ds) != 1 || ds[0].EventID != "match" {
		t.Fatalf("deliveries %+v, want one, for the matching event", ds)
	}
	var got struct {
		AdvancedFilters []map[string]any `json:"advanced_filters"`
	}
	b.do("GET", "/v1/subscriptions/"+sub, nil, &got)
	if len(got.AdvancedFilters) != 2 || got.AdvancedFilters[0]["operator_type"] != "NumberGreaterThan" {
		t.Fatalf("the subscription's advanced_filters: %+v", got.AdvancedFilters)
	}
}

// TestFilterPatchTakesEffectOnEveryNode: two nodes on one PostgreSQL
// database; a PATCH of the filters through node A applies to the next
// publish through node B.
func TestFilterPatchTakesEffectOnEveryNode(t *testing.T) {
	url := pgtest.SchemaURL(t)
	onPG := func(c *server.Config) { c.Store = url }
	a := setup(t, onPG)
	bn := setup(t, onPG)
	rc := newReceiver(t, status(200))
	sub := a.subscribe(map[string]any{"name": "f", "url": rc.URL, "advanced_filters": orderFilters})
	publishEvent(bn, map[string]any{"id": "small-1", "type": "order", "data": map[string]any{"amount": 50, "region": "eu"}})
	if n := len(a.deliveries(sub)); n != 0 {
		t.Fatalf("%d deliveries for a filtered-out event", n)
	}
	patch := map[string]any{"advanced_filters": []map[string]any{{"operator_type": "NumberGreaterThan", "key": "data.amount", "value": 10}}}
	if code, raw := a.do("PATCH", "/v1/subscriptions/"+sub, patch, nil); code != 200 {
		t.Fatalf("PATCH: %d %s", code, raw)
	}
	publishEvent(bn, map[string]any{"id": "small-2", "type": "order", "data": map[string]any{"amount": 50, "region": "eu"}})
	if ds := a.deliveries(sub); len(ds) != 1 || ds[0].EventID != "small-2" {
		t.Fatalf("after the PATCH through A, a publish through B: %+v", ds)
	}
}

// TestFilterTest: filter-test says whether an event would go to the
// subscription and which rule refused it; nothing is published.
func TestFilterTest(t *testing.T) {
	b := setup(t)
	sub := b.subscribe(map[string]any{"name": "f", "url": "http://127.0.0.1:1/", "event_types": []string{"order"},
		"subject_begins_with": "Orders/", "advanced_filters": orderFilters})
	type answer struct {
		Matches      bool
		Reason       string
		FailedFilter *int `json:"failed_filter"`
	}
	for _, c := range []struct {
		ev      map[string]any
		matches bool
		failed  int // -1: none
	}{
		{map[string]any{"id": "1", "type": "order", "subject": "orders/1", "data": map[string]any{"amount": 150, "region": "us"}}, true, -1},
		{map[string]any{"id": "2", "type": "order", "subject": "orders/1", "data": map[string]any{"amount": 150, "region": "asia"}}, false, 1},
		{map[string]any{"id": "3", "type": "order", "subject": "orders/1", "data": map[string]any{"amount": 5, "region": "us"}}, false, 0},
		{map[string]any{"id": "4", "type": "refund", "subject": "orders/1"}, false, -1},
		{map[string]any{"id": "5", "type": "order", "subject": "invoices/1"}, false, -1},
	} {
		c.ev["specversion"], c.ev["source"] = "1.0", "/orders"
		var a answer
		if code, raw := b.do("POST", "/v1/subscriptions/"+sub+"/filter-test", c.ev, &a); code != 200 {
			t.Fatalf("filter-test: %d %s", code, raw)
		}
		failed := -1
		if a.FailedFilter != nil {
			failed = *a.FailedFilter
		}
		if a.Matches != c.matches || failed != c.failed || (!a.Matches && a.Reason == "") {
			t.Errorf("event %s: %+v (failed %d), want matches %v failed %d", c.ev["id"], a, failed, c.matches, c.failed)
		}
	}
	if n := len(b.deliveries(sub)); n != 0 {
		t.Fatalf("filter-test published: %d deliveries", n)
	}
	// Case-sensitive subjects.
	if code, raw := b.do("PATCH", "/v1/subscriptions/"+sub, map[string]any{"subject_case_sensitive": true}, nil); code != 200 {
		t.Fatalf("PATCH: %d %s", code, raw)
	}
	var a answer
	b.do("POST", "/v1/subscriptions/"+sub+"/filter-test", map[string]any{"specversion": "1.0", "id": "6", "source": "/o", "type": "order",
		"subject": "orders/1", "data": map[string]any{"amount": 150, "region": "us"}}, &a)
	if a.Matches {
		t.Fatalf("a case-sensitive prefix Orders/ matched orders/1: %+v", a)
	}
}

// TestAdvancedFiltersAreChecked: a bad filter names its field.
func TestAdvancedFiltersAreChecked(t *testing.T) {
	b := setup(t)
	for _, c := range []struct {
		filters any
		field   string
	}{
		{[]map[string]any{{"operator_type": "NumberBigger", "key": "data.a", "value": 1}}, "advanced_filters[0].operator_type"},
		{[]map[string]any{{"operator_type": "StringIn", "key": "", "values": []string{"a"}}}, "advanced_filters[0].key"},
		{[]map[string]any{{"operator_type": "NumberIn", "key": "data.a", "values": []any{1, "two"}}}, "advanced_filters[0].values[1]"},
	} {
		code, raw := b.do("POST", "/v1/subscriptions", map[string]any{"name": "x", "url": "http://127.0.0.1:1/", "advanced_filters": c.filters}, nil)
		var p struct{ Field string }
		_ = json.Unmarshal(raw, &p)
		if code != 400 || p.Field != c.field {
			t.Errorf("%v: %d %s, want 400 naming %s", c.filters, code, raw, c.field)
		}
	}
}
