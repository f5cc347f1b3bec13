package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// testEventAnswer is the answer of POST /v1/subscriptions/{id}/test.
type testEventAnswer struct {
	EventID    string `json:"event_id"`
	DeliveryID string `json:"delivery_id"`
	Queued     *bool  `json:"queued"`
}

// sendTest asks for a test event for subscription sub (body nil: none) and
// returns the answer, failing the test unless it is 202.
func sendTest(b *bundle, sub string, body any) testEventAnswer {
	b.t.Helper()
	var out testEventAnswer
	if code, raw := b.do("POST", "/v1/subscriptions/"+sub+"/test", body, &out); code != http.StatusAccepted {
		b.t.Fatalf("test event: %d %s", code, raw)
	}
	if out.EventID == "" || out.DeliveryID == "" || out.Queued == nil {
		b.t.Fatalf("test event answer %+v: want event_id, delivery_id and queued", out)
	}
	return out
}

// testEventBody is a test event as a receiver reads it.
type testEventBody struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Time            time.Time       `json:"time"`
	DataContentType string          `json:"datacontenttype"`
	Data            json.RawMessage `json:"data"`
}

func decodeTestEvent(t *testing.T, raw []byte) testEventBody {
	t.Helper()
	var ev testEventBody
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatalf("test event %s: %v", raw, err)
	}
	return ev
}

// TestTestEventPushedSignedAndRetried: a test event reaches the
// subscription's receiver signed (the Standard Webhooks library verifies
// it), as a CloudEvent from /herald/test with the type and data asked for,
// although the subscription's event types and subject rule would refuse
// that event; a 500 is retried on the policy's schedule (fake clock), both
// attempts are logged and the delivery counted as delivered in /metrics.
// Another subscription of the account whose event types match the type
// gets nothing.
func TestTestEventPushedSignedAndRetried(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, func(n int, _ *http.Request, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	other := newReceiver(t, status(http.StatusOK))
	sub := b.subscribe(map[string]any{"name": "target", "url": rc.URL, "signing": map[string]any{"secret": secretA},
		"event_types": []string{"invoice.paid"}, "subject_begins_with": "/never",
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"10s"}, "max_attempts": 3}})
	bystander := b.subscribe(map[string]any{"name": "bystander", "url": other.URL, "event_types": []string{"order.created"}})

	ans := sendTest(b, sub, map[string]any{"type": "order.created", "data": map[string]any{"order_id": "ord-1"}})
	if *ans.Queued {
		t.Fatalf("a push subscription's test event was queued: %+v", ans)
	}
	d := stepRetries(b, sub, 1, func(int) time.Duration { return 10 * time.Second })
	if d.ID != ans.DeliveryID || d.EventID != ans.EventID || d.Status != "delivered" || d.Attempts != 2 {
		t.Fatalf("the test event's delivery %+v; the answer said %+v", d, ans)
	}
	as := b.attempts(d.ID)
	if len(as) != 2 || as[0].Outcome != "http_500" || as[1].Outcome != "http_200" || !as[1].StartedAt.Equal(start.Add(10*time.Second)) {
		t.Fatalf("attempts %+v", as)
	}
	if rc.count() != 2 {
		t.Fatalf("the receiver got %d requests, want 2", rc.count())
	}
	for i := range 2 {
		got := rc.request(i)
		if err := verifyWith(t, secretA, got); err != nil {
			t.Errorf("push %d does not verify: %v", i, err)
		}
		if err := verifyWith(t, secretB, got); err == nil {
			t.Errorf("push %d verifies with another secret", i)
		}
		ev := decodeTestEvent(t, got.body)
		if ev.SpecVersion != "1.0" || ev.ID != ans.EventID || ev.Source != "/herald/test" || ev.Type != "order.created" ||
			!ev.Time.Equal(start) || ev.DataContentType != "application/json" || string(ev.Data) != `{"order_id":"ord-1"}` {
			t.Errorf("push %d: %s", i, got.body)
		}
	}
	b.settle()
	if other.count() != 0 || len(b.deliveries(bystander)) != 0 {
		t.Fatalf("the other subscription got the test event: %d requests, %d deliveries", other.count(), len(b.deliveries(bystander)))
	}
	metrics := scrapeMetrics(b)
	for _, want := range []string{
		`herald_deliveries_finished_total{status="delivered"} 1`,
		`herald_delivery_attempts_total{outcome="http_500"} 1`,
		`herald_delivery_attempts_total{outcome="http_200"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestTestEventQueued: a pull subscription's test event (no body: type
// herald.test and the example data) waits in its queue and is received
// there; so is a test event for a push subscription that a failed push
// deactivated (failure_policy queue), which is not pushed.
func TestTestEventQueued(t *testing.T) {
	b := setup(t)
	pull := b.subscribe(map[string]any{"name": "puller", "delivery_mode": "pull"})
	ans := sendTest(b, pull, nil)
	if !*ans.Queued {
		t.Fatalf("a pull subscription's test event: %+v, want queued", ans)
	}
	got := receive(b, pull, map[string]any{"max_events": 10})
	if len(got) != 1 || got[0].DeliveryID != ans.DeliveryID {
		t.Fatalf("receive %+v; the answer said %+v", got, ans)
	}
	ev := decodeTestEvent(t, got[0].Event)
	var data struct {
		SubscriptionID string `json:"subscription_id"`
		Message        string `json:"message"`
	}
	if err := json.Unmarshal(ev.Data, &data); err != nil || ev.ID != ans.EventID || ev.Source != "/herald/test" ||
		ev.Type != "herald.test" || data.SubscriptionID != pull || !strings.Contains(data.Message, pull) {
		t.Fatalf("the default test event: %s (%v)", got[0].Event, err)
	}

	rc := newReceiver(t, status(http.StatusServiceUnavailable))
	push := b.subscribe(map[string]any{"name": "q", "url": rc.URL, "failure_policy": "queue"})
	first := sendTest(b, push, map[string]any{})
	b.waitDelivery(push, "queued after the failed push", func(d delivery) bool { return d.Status == "queued" })
	if s := subStateOf(b, push); s.State != "deactivated" {
		t.Fatalf("after the failed push the subscription is %+v", s)
	}
	second := sendTest(b, push, map[string]any{"data": nil})
	if !*second.Queued {
		t.Fatalf("a deactivated subscription's test event: %+v, want queued", second)
	}
	b.settle()
	if rc.count() != 1 {
		t.Fatalf("the deactivated subscription's receiver got %d requests, want the first event's 1", rc.count())
	}
	items := receive(b, push, map[string]any{"max_events": 10})
	ids := map[string]bool{}
	for _, it := range items {
		ids[it.DeliveryID] = true
	}
	if len(items) != 2 || !ids[first.DeliveryID] || !ids[second.DeliveryID] {
		t.Fatalf("the deactivated subscription's queue %+v; want %s and %s", items, first.DeliveryID, second.DeliveryID)
	}
}

// TestTestEventRefusals: bad input answers 400 naming the field, a
// subscription awaiting validation 409, another account's subscription
// 404, another Content-Type 415; none publishes anything.
func TestTestEventRefusals(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(http.StatusOK))
	sub := b.subscribe(map[string]any{"name": "target", "url": rc.URL})
	waiting := b.subscribe(map[string]any{"name": "eg", "url": rc.URL + "/eg", "delivery_schema": "eventgrid", "validation": "eventgrid"})
	tn := newTenant(b, "other")
	before := b.state()
	path := "/v1/subscriptions/" + sub + "/test"
	for _, c := range []struct {
		body  string
		field string
	}{
		{`{"type":""}`, "type"},
		{`{"type":"a\u0001b"}`, "type"},
		{`{"type":"` + strings.Repeat("t", 257) + `"}`, "type"},
		{`{"type":7}`, "type"},
		{`{"data":"text"}`, "data"},
		{`{"data":[1,2]}`, "data"},
		{`{"data":{"a":1,"a":2}}`, "data.a"},
		{`{"data":{"a":}}`, "body"}, // a syntax error: the decoder names the body, with the byte
		{`{"kind":"x"}`, "kind"},
		{`[]`, "body"},
	} {
		resp, raw := b.send("POST", path, map[string]string{"Content-Type": "application/json"}, c.body)
		var p struct{ Field, Detail string }
		_ = json.Unmarshal(raw, &p)
		if resp.StatusCode != http.StatusBadRequest || p.Field != c.field || p.Detail == "" {
			t.Errorf("%s: %d %s; want 400 naming %s", c.body, resp.StatusCode, raw, c.field)
		}
	}
	resp, raw := b.send("POST", path, map[string]string{"Content-Type": "text/plain"}, `{}`)
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d %s; want 415", resp.StatusCode, raw)
	}
	code, raw := b.do("POST", "/v1/subscriptions/"+waiting+"/test", nil, nil)
	if code != http.StatusConflict || !strings.Contains(string(raw), "validation") {
		t.Errorf("a subscription awaiting validation: %d %s; want 409 saying why", code, raw)
	}
	code, raw = b.doAs(tn.accountKey, "POST", path, nil, nil)
	if code != http.StatusNotFound {
		t.Errorf("another account's subscription: %d %s; want 404", code, raw)
	}
	if code, raw := b.do("POST", "/v1/subscriptions/sub_missing/test", nil, nil); code != http.StatusNotFound {
		t.Errorf("no such subscription: %d %s; want 404", code, raw)
	}
	if after := b.state(); after != before {
		t.Fatalf("a refused test event changed something:\nbefore %s\nafter  %s", before, after)
	}
	if rc.count() != 0 {
		t.Fatalf("the receiver got %d requests", rc.count())
	}
	// The same account key sends one to its own subscription.
	own := newReceiver(t, status(http.StatusOK))
	var mine struct{ ID string }
	if code, raw := b.doAs(tn.accountKey, "POST", "/v1/subscriptions", map[string]any{"name": "mine", "url": own.URL}, &mine); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, raw)
	}
	if code, raw := b.doAs(tn.accountKey, "POST", "/v1/subscriptions/"+mine.ID+"/test", nil, nil); code != http.StatusAccepted {
		t.Fatalf("an account's own subscription: %d %s", code, raw)
	}
	eventually(t, "the account's test event pushed", func() bool { return own.count() == 1 })
}
