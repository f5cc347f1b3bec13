package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// subExpressions is the part of the subscription resource the CEL
// expressions are.
type subExpressions struct {
	FilterExpression *string `json:"filter_expression"`
	Transform        *struct {
		CEL string `json:"cel"`
	} `json:"transform"`
	UpdatedAt string `json:"updated_at"`
}

func (b *bundle) expressionsOf(sub string) subExpressions {
	b.t.Helper()
	var got subExpressions
	if code, raw := b.do("GET", "/v1/subscriptions/"+sub, nil, &got); code != http.StatusOK {
		b.t.Fatalf("GET: %d %s", code, raw)
	}
	return got
}

// TestSubscriptionExpressionsKeptAsWritten: transform.cel and
// filter_expression are stored and returned as written; PATCH replaces
// them, "" and null remove them; absent keeps them.
func TestSubscriptionExpressionsKeptAsWritten(t *testing.T) {
	b := setup(t)
	transform := `{"text": "<" + event.subject + "> & " + string(data.amount)}`
	filter := "data.amount > 100 &&\n\tevent.tenant == \"acme\"\r\n|| false" // line breaks and tabs kept
	sub := b.subscribe(map[string]any{"name": "cel", "url": "http://127.0.0.1:1/",
		"transform": map[string]any{"cel": transform}, "filter_expression": filter})
	got := b.expressionsOf(sub)
	if got.Transform == nil || got.Transform.CEL != transform || got.FilterExpression == nil || *got.FilterExpression != filter {
		t.Fatalf("after create: %+v", got)
	}
	for _, c := range []struct {
		patch             string
		transform, filter string // "" : none
	}{
		{`{"name": "renamed"}`, transform, filter},
		{`{"transform": {"cel": "data"}}`, "data", filter},
		{`{"filter_expression": ""}`, "data", ""},
		{`{"transform": null, "filter_expression": "true"}`, "", "true"},
		{`{"transform": {"cel": "event"}}`, "event", "true"},
		{`{"transform": {"cel": ""}}`, "", "true"},
	} {
		if code, raw := b.do("PATCH", "/v1/subscriptions/"+sub, []byte(c.patch), nil); code != http.StatusOK {
			t.Fatalf("PATCH %s: %d %s", c.patch, code, raw)
		}
		got := b.expressionsOf(sub)
		if (got.Transform == nil) != (c.transform == "") || (got.Transform != nil && got.Transform.CEL != c.transform) {
			t.Fatalf("after PATCH %s: transform %+v; want %q", c.patch, got.Transform, c.transform)
		}
		if (got.FilterExpression == nil) != (c.filter == "") || (got.FilterExpression != nil && *got.FilterExpression != c.filter) {
			t.Fatalf("after PATCH %s: filter_expression %v; want %q", c.patch, got.FilterExpression, c.filter)
		}
	}
}

// TestSubscriptionExpressionsRefused: a bad expression is refused 400,
// the problem naming transform.cel or filter_expression with CEL's
// message and position; a create makes nothing, an update changes nothing.
func TestSubscriptionExpressionsRefused(t *testing.T) {
	b := setup(t)
	sub := b.subscribe(map[string]any{"name": "kept", "url": "http://127.0.0.1:1/",
		"transform": map[string]any{"cel": "data"}, "filter_expression": "true"})
	before := b.expressionsOf(sub)
	long := "true" + strings.Repeat(" ", 4093)
	for _, c := range []struct {
		body, field, detail string
	}{
		{`{"transform": {"cel": "data.a +"}}`, "transform.cel", "line 1, column 9: Syntax error: mismatched input '<EOF>'"},
		{`{"transform": {"cel": "data +\t amount"}}`, "transform.cel", "line 1, column 9: undeclared reference to 'amount'"},
		{`{"transform": {"cel": "'a' + 1"}}`, "transform.cel", "line 1, column 5: found no matching overload for '_+_'"},
		{`{"transform": {}}`, "transform.cel", "is required"},
		{`{"transform": {"cel": "data", "lang": "js"}}`, "transform.lang", ""},
		{`{"transform": "data"}`, "transform", ""},
		{`{"filter_expression": "data.amount >"}`, "filter_expression", "line 1, column 14: Syntax error"},
		{`{"filter_expression": "'yes'"}`, "filter_expression", "the expression's result is string, not a bool"},
		{`{"filter_expression": "   "}`, "filter_expression", "the expression is empty"},
		{`{"filter_expression": "` + long + `"}`, "filter_expression", "the expression is 4097 bytes, more than 4096"},
	} {
		for _, method := range []string{"POST", "PATCH"} {
			path, body := "/v1/subscriptions/"+sub, c.body
			if method == "POST" {
				path, body = "/v1/subscriptions", `{"name": "new", "url": "http://127.0.0.1:1/",`+c.body[1:]
			}
			code, raw := b.do(method, path, []byte(body), nil)
			var p map[string]any
			_ = json.Unmarshal(raw, &p)
			if code != http.StatusBadRequest || p["field"] != c.field || !strings.Contains(p["detail"].(string), c.detail) {
				t.Errorf("%s %.60s: %d %s; want 400 naming %s with %q", method, c.body, code, raw, c.field, c.detail)
			}
		}
	}
	if after := b.expressionsOf(sub); after.UpdatedAt != before.UpdatedAt || after.Transform.CEL != "data" || *after.FilterExpression != "true" {
		t.Fatalf("a refused PATCH changed the subscription: %+v, was %+v", after, before)
	}
	var list struct{ Data []json.RawMessage }
	b.do("GET", "/v1/subscriptions", nil, &list)
	if len(list.Data) != 1 {
		t.Fatalf("%d subscriptions after refused creates; want 1", len(list.Data))
	}
}
