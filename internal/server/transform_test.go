package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// publishOrder publishes an order event with this id and data.
func publishOrder(b *bundle, id string, data map[string]any) {
	b.t.Helper()
	publishEvent(b, map[string]any{"id": id, "type": "order", "subject": "orders/" + id, "tenant": "acme", "data": data})
}

// TestFilterExpressionAtPublish: filter_expression is ANDed with the
// advanced filters at publish; an event it rejects makes no delivery, and
// filter-test names it as the reason.
func TestFilterExpressionAtPublish(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	sub := b.subscribe(map[string]any{"name": "eur-or-refund", "url": rc.URL,
		"advanced_filters":  []map[string]any{{"operator_type": "StringIn", "key": "data.region", "values": []string{"eu", "us"}}},
		"filter_expression": `data.amount > 100.0 && data.currency == "EUR" || has(data.refund) && data.refund`})
	publishOrder(b, "big-eur", map[string]any{"amount": 150, "currency": "EUR", "region": "eu"})
	publishOrder(b, "small-eur", map[string]any{"amount": 50, "currency": "EUR", "region": "eu"})
	publishOrder(b, "big-usd", map[string]any{"amount": 500, "currency": "USD", "region": "us"})
	publishOrder(b, "refund", map[string]any{"amount": 5, "currency": "USD", "refund": true, "region": "us"})
	publishOrder(b, "refund-asia", map[string]any{"amount": 5, "refund": true, "region": "asia"}) // the advanced filter says no
	publishOrder(b, "error", map[string]any{"amount": "many", "region": "eu"})                    // the expression fails: no match
	got := map[string]bool{}
	for _, d := range b.deliveries(sub) {
		got[d.EventID] = true
	}
	if len(got) != 2 || !got["big-eur"] || !got["refund"] {
		t.Fatalf("deliveries for %v; want big-eur and refund", got)
	}
	var ft struct {
		Matches bool
		Reason  string
	}
	ev := `{"specversion":"1.0","id":"x","source":"/s","type":"order","data":{"amount":50,"currency":"EUR","region":"eu"}}`
	if code, raw := b.do("POST", "/v1/subscriptions/"+sub+"/filter-test", json.RawMessage(ev), &ft); code != 200 {
		t.Fatalf("filter-test: %d %s", code, raw)
	}
	if ft.Matches || ft.Reason != "filter_expression is false" {
		t.Fatalf("filter-test: %+v", ft)
	}
	ev = `{"specversion":"1.0","id":"x","source":"/s","type":"order","data":{"amount":"many","region":"eu"}}`
	b.do("POST", "/v1/subscriptions/"+sub+"/filter-test", json.RawMessage(ev), &ft)
	if ft.Matches || !strings.HasPrefix(ft.Reason, "filter_expression failed: ") || !strings.Contains(ft.Reason, "no such overload") {
		t.Fatalf("filter-test of an event the expression fails on: %+v", ft)
	}
}

// reshape is a transform that reshapes an order into a chat message.
const reshape = `{
  "text": "Order " + event.subject + ": " + string(data.amount) + " " + data.currency,
  "tenant": event.tenant
}`

// TestTransformReshapesThePush: the receiver gets the transform's output
// as the data, signed over the body it got, in the CloudEvents envelope;
// the stored event stays as published.
func TestTransformReshapesThePush(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	sub := b.subscribe(map[string]any{"name": "chat", "url": rc.URL, "signing": map[string]any{"secret": secretA},
		"transform": map[string]any{"cel": reshape}})
	publishOrder(b, "o1", map[string]any{"amount": 150, "currency": "EUR", "items": []any{1, 2}})
	b.waitDelivery(sub, "delivered", func(d delivery) bool { return d.Status == "delivered" })
	got := rc.request(0)
	var ev map[string]any
	if err := json.Unmarshal(got.body, &ev); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(ev["data"])
	if string(data) != `{"tenant":"acme","text":"Order orders/o1: 150 EUR"}` || ev["datacontenttype"] != "application/json" ||
		ev["id"] != "o1" || ev["type"] != "order" || ev["tenant"] != "acme" {
		t.Fatalf("pushed %s", got.body)
	}
	if err := verifyWith(t, secretA, got); err != nil {
		t.Fatalf("the signature of the transformed body: %v", err)
	}
}

// TestTransformNullFilters: a transform that gives null ends the delivery
// filtered, with no attempt and nothing sent; other events go.
func TestTransformNullFilters(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	sub := b.subscribe(map[string]any{"name": "big-only", "url": rc.URL,
		"transform": map[string]any{"cel": `data.amount > 100.0 ? dyn({"amount": data.amount}) : null`}})
	publishOrder(b, "small", map[string]any{"amount": 5})
	d := b.waitDelivery(sub, "filtered", func(d delivery) bool { return d.Status == "filtered" })
	if d.Attempts != 0 || len(b.attempts(d.ID)) != 0 || rc.count() != 0 {
		t.Fatalf("filtered delivery %+v; %d attempts logged, %d pushes", d, len(b.attempts(d.ID)), rc.count())
	}
	publishOrder(b, "big", map[string]any{"amount": 500})
	eventually(t, "the big order pushed", func() bool { return rc.count() == 1 })
	var filtered struct{ Data []delivery }
	b.do("GET", "/v1/deliveries?status=filtered&subscription_id="+sub, nil, &filtered)
	if len(filtered.Data) != 1 || filtered.Data[0].EventID != "small" {
		t.Fatalf("?status=filtered lists %+v", filtered.Data)
	}
}

// TestTransformFailureDeadLetters: each kind of runtime failure (a missing
// member, a wrong type, the cost limit, an output too large) dead-letters
// the delivery with TransformFailed at its first attempt, nothing sent,
// the attempt recording CEL's error, and the endpoint stays enabled with no
// failure counted.
func TestTransformFailureDeadLetters(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	for _, c := range []struct{ name, cel, want string }{
		{"missing", `{"x": data.nothere}`, "no such key: nothere"},
		{"type", `{"x": data.amount + "a"}`, "no such overload"},
		{"cost", `data.list.map(x, data.list.map(y, x + y))`, "cost limit exceeded"},
		{"output", `data.list.map(x, "` + strings.Repeat("a", 2000) + `")`, "more than 1048576"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sub := b.subscribe(map[string]any{"name": c.name, "url": rc.URL, "transform": map[string]any{"cel": c.cel},
				"event_types": []string{"fail." + c.name}})
			list := make([]float64, 1000)
			publishEvent(b, map[string]any{"id": c.name, "type": "fail." + c.name, "data": map[string]any{"amount": 1, "list": list}})
			d := b.waitDelivery(sub, "dead-lettered", func(d delivery) bool { return d.Status == "dead_lettered" })
			if d.DeadLetterReason == nil || *d.DeadLetterReason != "TransformFailed" || d.Attempts != 1 {
				t.Fatalf("delivery %+v", d)
			}
			as := b.attempts(d.ID)
			if len(as) != 1 || as[0].Outcome != "transform_error" || as[0].Error == nil || !strings.Contains(*as[0].Error, c.want) {
				t.Fatalf("attempts %+v; want one transform_error saying %q", as, c.want)
			}
			if ep := b.endpoint(b.endpointOf(sub)); ep.State != "enabled" || ep.ConsecutiveFailures != 0 {
				t.Fatalf("endpoint %+v after a transform failure", ep)
			}
			// The dead letter holds the event as published.
			var dl struct {
				Data []struct {
					Event struct {
						Data struct {
							List []float64 `json:"list"`
						} `json:"data"`
					} `json:"event"`
				}
			}
			if code, raw := b.do("GET", "/v1/dead-letters?subscription_id="+sub, nil, &dl); code != 200 || len(dl.Data) != 1 ||
				len(dl.Data[0].Event.Data.List) != 1000 {
				t.Fatalf("dead letters: %d %.300s", code, raw)
			}
		})
	}
	if rc.count() != 0 {
		t.Fatalf("%d pushes; a failed transform sends nothing", rc.count())
	}
}

// TestTransformAgainOnRedeliver: a redeliver transforms the stored event
// again, with the subscription's transform as it is then.
func TestTransformAgainOnRedeliver(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	sub := b.subscribe(map[string]any{"name": "chat", "url": rc.URL, "transform": map[string]any{"cel": `{"v": 1}`}})
	publishOrder(b, "o1", map[string]any{"amount": 150})
	d := b.waitDelivery(sub, "delivered", func(d delivery) bool { return d.Status == "delivered" })
	if code, raw := b.do("PATCH", "/v1/subscriptions/"+sub, map[string]any{"transform": map[string]any{"cel": `{"v": 2, "amount": data.amount}`}}, nil); code != 200 {
		t.Fatalf("PATCH: %d %s", code, raw)
	}
	if code, raw := b.do("POST", "/v1/deliveries/"+d.ID+"/redeliver", nil, nil); code != http.StatusAccepted {
		t.Fatalf("redeliver: %d %s", code, raw)
	}
	eventually(t, "the redelivery", func() bool { return rc.count() == 2 })
	var first, second map[string]any
	json.Unmarshal(rc.request(0).body, &first)
	json.Unmarshal(rc.request(1).body, &second)
	f, _ := json.Marshal(first["data"])
	s, _ := json.Marshal(second["data"])
	if string(f) != `{"v":1}` || string(s) != `{"amount":150,"v":2}` {
		t.Fatalf("pushed %s then %s", f, s)
	}
}

// TestTransformEachEventOfABatch: a batching subscription transforms each
// event of a batch; one the transform skips leaves the batch (filtered),
// the others are sent together.
func TestTransformEachEventOfABatch(t *testing.T) {
	b := setup(t, oneAtATime)
	rc, open := gatedReceiver(t, func(int) int { return 200 })
	sub := b.subscribe(map[string]any{"name": "batch", "url": rc.URL, "max_events_per_batch": 10,
		"transform": map[string]any{"cel": `data.n == 2.0 ? null : dyn({"n": int(data.n) * 10})`}})
	publishOrder(b, "lone", map[string]any{"n": 0})
	eventually(t, "the lone event sent", func() bool { return rc.count() == 1 })
	for _, n := range []int{1, 2, 3} {
		publishOrder(b, fmt.Sprint("q", n), map[string]any{"n": n})
	}
	open()
	eventually(t, "the batch sent", func() bool { return rc.count() == 2 })
	b.settle()
	var batch []map[string]any
	if err := json.Unmarshal(rc.request(1).body, &batch); err != nil {
		t.Fatalf("the second push: %s", rc.request(1).body)
	}
	var got []any
	for _, ev := range batch {
		got = append(got, ev["data"])
	}
	g, _ := json.Marshal(got)
	if string(g) != `[{"n":10},{"n":30}]` {
		t.Fatalf("the batch carried %s", g)
	}
	status := map[string]string{}
	for _, d := range b.deliveries(sub) {
		status[d.EventID] = d.Status
	}
	if status["q2"] != "filtered" || status["q1"] != "delivered" || status["q3"] != "delivered" {
		t.Fatalf("statuses %v", status)
	}
}

// TestPreviewIsWhatAPushSends: POST /v1/filter-test previews a
// subscription not yet saved; its delivered body is byte for byte the one
// the saved subscription then pushes, in each schema. A null transform
// previews filtered, a failing one its CEL error; a bad field is named
// subscription.<field>, a bad event event.<field>.
func TestPreviewIsWhatAPushSends(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	ev := map[string]any{"specversion": "1.0", "source": "/shop", "subject": "orders/p1", "tenant": "acme",
		"time": "2026-11-30T10:00:00Z", "data": map[string]any{"amount": 150, "currency": "EUR"}}
	for i, schema := range []string{"cloudevents", "cloudevents-binary", "eventgrid", "data"} {
		// An event of its own for each subscription, previewed then published.
		ev["id"], ev["type"] = fmt.Sprint("p", i), "order."+schema
		spec := map[string]any{"name": "preview-" + schema, "url": rc.URL, "delivery_schema": schema,
			"transform": map[string]any{"cel": reshape}, "event_types": []string{ev["type"].(string)}}
		var pv struct {
			Matches   bool
			Delivered *struct {
				Filtered       bool              `json:"filtered"`
				TransformError *string           `json:"transform_error"`
				ContentType    string            `json:"content_type"`
				Headers        map[string]string `json:"headers"`
				Body           *string           `json:"body"`
			}
		}
		if code, raw := b.do("POST", "/v1/filter-test", map[string]any{"event": ev, "subscription": spec}, &pv); code != 200 {
			t.Fatalf("%s: preview: %d %s", schema, code, raw)
		}
		if !pv.Matches || pv.Delivered == nil || pv.Delivered.Body == nil {
			t.Fatalf("%s: preview %+v", schema, pv)
		}
		b.subscribe(spec)
		publishEvent(b, ev)
		eventually(t, schema+" pushed", func() bool { return rc.count() == i+1 })
		got := rc.request(i)
		if string(got.body) != *pv.Delivered.Body {
			t.Fatalf("%s: pushed %s; previewed %s", schema, got.body, *pv.Delivered.Body)
		}
		if ct := got.header.Get("Content-Type"); ct != pv.Delivered.ContentType {
			t.Fatalf("%s: content type %q; previewed %q", schema, ct, pv.Delivered.ContentType)
		}
		for name, v := range pv.Delivered.Headers {
			if got.header.Get(name) != v {
				t.Fatalf("%s: header %s %q; previewed %q", schema, name, got.header.Get(name), v)
			}
		}
	}
	for _, c := range []struct {
		cel, want string
	}{{`null`, "filtered"}, {`{"x": data.nothere}`, "no such key: nothere"}} {
		var pv struct {
			Delivered struct {
				Filtered       bool    `json:"filtered"`
				TransformError *string `json:"transform_error"`
			}
		}
		spec := map[string]any{"name": "x", "url": rc.URL, "transform": map[string]any{"cel": c.cel}}
		b.do("POST", "/v1/filter-test", map[string]any{"event": ev, "subscription": spec}, &pv)
		if c.want == "filtered" && !pv.Delivered.Filtered || c.want != "filtered" &&
			(pv.Delivered.TransformError == nil || !strings.Contains(*pv.Delivered.TransformError, c.want)) {
			t.Fatalf("preview of %s: %+v", c.cel, pv)
		}
	}
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"event": ev, "subscription": map[string]any{"name": "x", "url": rc.URL, "transform": map[string]any{"cel": "data +"}}}, "subscription.transform.cel"},
		{map[string]any{"event": ev, "subscription": map[string]any{"name": "x", "url": rc.URL, "filter_expression": "1"}}, "subscription.filter_expression"},
		{map[string]any{"event": ev, "subscription": map[string]any{"name": "x", "url": rc.URL, "bogus": 1}}, "subscription.bogus"},
		{map[string]any{"event": ev, "subscription": map[string]any{"url": rc.URL}}, "subscription.name"},
		{map[string]any{"event": map[string]any{"specversion": "1.0", "id": "x", "source": "/s"}, "subscription": map[string]any{"name": "x", "url": rc.URL}}, "event.type"},
		{map[string]any{"subscription": map[string]any{"name": "x", "url": rc.URL}}, "event"},
	} {
		p := problemOf(t, b, "POST", "/v1/filter-test", c.body, http.StatusBadRequest)
		if p["field"] != c.field {
			t.Fatalf("%v: problem names %q; want %q (%+v)", c.body, p["field"], c.field, p)
		}
	}
}
