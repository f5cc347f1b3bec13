package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// problemOf decodes a problem+json answer and checks its content type.
func problemOf(t *testing.T, b *bundle, method, path string, body any, wantCode int) map[string]any {
	t.Helper()
	var in any = body
	if s, ok := body.(string); ok {
		in = []byte(s)
	}
	req, _ := http.NewRequest(method, b.api.URL+path, nil)
	if in != nil {
		raw, ok := in.([]byte)
		if !ok {
			raw, _ = json.Marshal(in)
		}
		req, _ = http.NewRequest(method, b.api.URL+path, strings.NewReader(string(raw)))
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != wantCode {
		t.Fatalf("%s %s: status %d, want %d", method, path, resp.StatusCode, wantCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("%s %s: content type %q", method, path, ct)
	}
	var p map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	if int(p["status"].(float64)) != wantCode || p["title"] == "" {
		t.Fatalf("problem document: %v", p)
	}
	return p
}

func TestSubscriptionValidationNamesFieldAndWritesNothing(t *testing.T) {
	b := setup(t)
	good := func() map[string]any {
		return map[string]any{"name": "billing", "url": "https://example.com/hook"}
	}
	with := func(k string, v any) map[string]any { m := good(); m[k] = v; return m }
	tooMany := map[string]string{}
	for i := 0; i < 11; i++ {
		tooMany["X-H"+strings.Repeat("a", i)] = "v"
	}
	cases := []struct {
		body  any
		field string
	}{
		{map[string]any{"url": "https://example.com/hook"}, "name"},
		{with("name", ""), "name"},
		{map[string]any{"name": "x"}, "url"},
		{with("url", "ftp://example.com"), "url"},
		{with("url", "/relative"), "url"},
		{with("headers", tooMany), "headers"},
		{with("headers", map[string]string{"X-Big": strings.Repeat("v", 4097)}), "headers.X-Big"},
		{with("headers", map[string]string{"Webhook-Id": "x"}), "headers.Webhook-Id"},
		{with("headers", map[string]string{"Bad Name": "x"}), "headers.Bad Name"},
		{with("timeout", "soon"), "timeout"},
		{with("timeout", "10m"), "timeout"},
		{with("retry_policy", map[string]any{"preset": "nope"}), "retry_policy.preset"},
		{with("retry_policy", map[string]any{"preset": "eventgrid", "max_attempts": 31}), "retry_policy.max_attempts"},
		{with("retry_policy", map[string]any{"preset": "eventgrid", "ttl": "1441m"}), "retry_policy.ttl"},
		{with("retry_policy", map[string]any{"preset": "eventgrid", "colour": 1}), "retry_policy.colour"},
		{with("event_types", []string{""}), "event_types[0]"},
		{with("event_types", "invoice.paid"), "event_types"},
		{with("surprise", true), "surprise"},
		{"{not json", "body"},
	}
	for _, c := range cases {
		p := problemOf(t, b, "POST", "/v1/subscriptions", c.body, http.StatusBadRequest)
		if p["field"] != c.field {
			t.Errorf("body %v: field %v, want %s (%v)", c.body, p["field"], c.field, p["detail"])
		}
	}
	var list struct{ Data []any }
	b.do("GET", "/v1/subscriptions", nil, &list)
	if len(list.Data) != 0 {
		t.Fatalf("rejected requests wrote %d subscriptions", len(list.Data))
	}

	id := b.subscribe(good())
	p := problemOf(t, b, "POST", "/v1/subscriptions", good(), http.StatusConflict)
	if p["field"] != "name" {
		t.Fatalf("duplicate name: %v", p)
	}
	p = problemOf(t, b, "PATCH", "/v1/subscriptions/"+id, map[string]any{"url": "nope"}, http.StatusBadRequest)
	if p["field"] != "url" {
		t.Fatalf("patch: %v", p)
	}
	var sub struct{ URL string }
	b.do("GET", "/v1/subscriptions/"+id, nil, &sub)
	if sub.URL != "https://example.com/hook" {
		t.Fatalf("a rejected PATCH changed the url to %q", sub.URL)
	}
	problemOf(t, b, "GET", "/v1/subscriptions/sub_missing", nil, http.StatusNotFound)
	problemOf(t, b, "GET", "/v1/subscriptions?limit=0", nil, http.StatusBadRequest)
	problemOf(t, b, "GET", "/v1/deliveries?status=lost", nil, http.StatusBadRequest)
}

func TestPublishValidationWritesNothing(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	sub := b.subscribe(map[string]any{"name": "all", "url": rc.URL})
	cases := []struct {
		body  string
		ctype string
		code  int
		field string
	}{
		{`{"specversion":"1.0","source":"/s","type":"t"}`, "application/cloudevents+json", 400, "id"},
		{`[{"specversion":"1.0","id":"1","source":"/s","type":"t"},{"specversion":"1.0","id":"2","type":"t"}]`, "application/cloudevents-batch+json", 400, "events[1].source"},
		{`{"specversion":"0.3","id":"1","source":"/s","type":"t"}`, "application/json", 400, "specversion"},
		{`{"specversion":"1.0","id":"1","source":"/s","type":"t","time":"yesterday"}`, "application/json", 400, "time"},
		{`hello`, "text/plain", 415, "content-type"},
		{`{"specversion":"1.0","id":"1","source":"/s","type":"t","data":"` + strings.Repeat("x", 1<<20) + `"}`, "application/json", 413, ""},
	}
	for _, c := range cases {
		req, _ := http.NewRequest("POST", b.api.URL+"/v1/events", strings.NewReader(c.body))
		req.Header.Set("Content-Type", c.ctype)
		resp, err := b.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if resp.StatusCode != c.code || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%.60s: %d %s, want %d problem", c.body, resp.StatusCode, resp.Header.Get("Content-Type"), c.code)
			continue
		}
		if c.field != "" && !strings.HasSuffix(p["field"].(string), c.field) {
			t.Errorf("%.60s: field %v, want %s", c.body, p["field"], c.field)
		}
	}
	if ds := b.deliveries(sub); len(ds) != 0 {
		t.Fatalf("rejected publishes made %d deliveries", len(ds))
	}
	if rc.count() != 0 {
		t.Fatalf("rejected publishes reached the endpoint %d times", rc.count())
	}
}

func TestDuplicatePublishMakesNoDeliveries(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	sub := b.subscribe(map[string]any{"name": "all", "url": rc.URL})
	ev := map[string]any{"specversion": "1.0", "id": "same", "source": "/s", "type": "t"}
	var first, second struct {
		Events []struct {
			Duplicate  bool
			Deliveries int
		}
	}
	b.do("POST", "/v1/events", ev, &first)
	b.do("POST", "/v1/events", ev, &second)
	if first.Events[0].Duplicate || first.Events[0].Deliveries != 1 || !second.Events[0].Duplicate || second.Events[0].Deliveries != 0 {
		t.Fatalf("first %+v second %+v", first, second)
	}
	b.waitDelivery(sub, "delivered", func(d delivery) bool { return d.Status == "delivered" })
	if len(b.deliveries(sub)) != 1 {
		t.Fatal("a duplicate made a delivery")
	}
}

func TestMatchingByTypeAndSubject(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	sub := b.subscribe(map[string]any{"name": "m", "url": rc.URL, "event_types": []string{"invoice.paid"},
		"subject_begins_with": "/invoices/", "subject_ends_with": ".pdf"})
	pub := func(id, typ, subject string) {
		b.do("POST", "/v1/events", map[string]any{"specversion": "1.0", "id": id, "source": "/s", "type": typ, "subject": subject}, nil)
	}
	pub("1", "invoice.paid", "/invoices/42.pdf")
	pub("2", "invoice.sent", "/invoices/42.pdf")
	pub("3", "invoice.paid", "/orders/42.pdf")
	pub("4", "invoice.paid", "/invoices/42.txt")
	ds := b.deliveries(sub)
	if len(ds) != 1 || ds[0].EventID != "1" {
		t.Fatalf("matched %+v", ds)
	}
}

func TestRedeliverAndRedrive(t *testing.T) {
	b := setup(t)
	rc, failing := switchable(t, http.StatusNotFound, true)
	sub := b.subscribe(map[string]any{"name": "r", "url": rc.URL})
	b.publish("e1", "t")
	b.publish("e2", "t")
	eventually(t, "two dead letters", func() bool {
		var dl struct{ Data []map[string]any }
		b.do("GET", "/v1/dead-letters?subscription_id="+sub, nil, &dl)
		return len(dl.Data) == 2
	})
	var dl struct {
		Data []struct {
			ID                  string          `json:"id"`
			DeadLetterReason    string          `json:"dead_letter_reason"`
			DeliveryAttempts    int             `json:"delivery_attempts"`
			LastDeliveryOutcome string          `json:"last_delivery_outcome"`
			PublishTime         string          `json:"publish_time"`
			LastAttemptTime     *string         `json:"last_delivery_attempt_time"`
			Event               json.RawMessage `json:"event"`
		}
	}
	b.do("GET", "/v1/dead-letters?subscription_id="+sub, nil, &dl)
	x := dl.Data[0]
	if x.DeadLetterReason != "NonRetriableStatus" || x.DeliveryAttempts != 1 || x.LastDeliveryOutcome != "http_404" || x.PublishTime == "" || x.LastAttemptTime == nil || !strings.Contains(string(x.Event), `"source":"/test"`) {
		t.Fatalf("dead letter fields: %+v", x)
	}

	failing.Store(false)
	var one delivery
	if code, raw := b.do("POST", "/v1/deliveries/"+x.ID+"/redeliver", nil, &one); code != http.StatusAccepted {
		t.Fatalf("redeliver: %d %s", code, raw)
	}
	eventually(t, "redelivered", func() bool {
		var d delivery
		b.do("GET", "/v1/deliveries/"+x.ID, nil, &d)
		return d.Status == "delivered" && d.Attempts == 2
	})
	var rd struct{ Redriven int }
	if code, raw := b.do("POST", "/v1/dead-letters/redrive", map[string]any{"subscription_id": sub}, &rd); code != http.StatusAccepted || rd.Redriven != 1 {
		t.Fatalf("redrive: %d %s", code, raw)
	}
	eventually(t, "redriven", func() bool {
		for _, d := range b.deliveries(sub) {
			if d.Status != "delivered" {
				return false
			}
		}
		return true
	})
	problemOf(t, b, "POST", "/v1/dead-letters/redrive", map[string]any{}, http.StatusBadRequest)
	problemOf(t, b, "POST", "/v1/deliveries/dlv_nope/redeliver", nil, http.StatusNotFound)
}
