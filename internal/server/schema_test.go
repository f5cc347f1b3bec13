package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

// publishData publishes one CloudEvent with JSON data and a subject.
func publishData(b *bundle, id string, data map[string]any) {
	b.t.Helper()
	ev := map[string]any{"specversion": "1.0", "id": id, "source": "/orders", "type": "order.created",
		"subject": "orders/" + id, "dataversion": "2", "data": data}
	if code, raw := b.do("POST", "/v1/events", ev, nil); code != http.StatusAccepted {
		b.t.Fatalf("publish: %d %s", code, raw)
	}
}

// TestCloudEventsSDKReadsPushes: a receiver written with the CloudEvents Go
// SDK reads Herald's pushes in structured mode, binary mode and batch mode,
// attribute by attribute.
func TestCloudEventsSDKReadsPushes(t *testing.T) {
	b := setup(t)
	type got struct {
		events []cloudevents.Event
		err    error
	}
	read := make(chan got, 10)
	var sdk *receiver
	sdk = newReceiver(t, func(n int, r *http.Request, w http.ResponseWriter) {
		// The receiver read the body; the SDK reads it again.
		r.Body = io.NopCloser(bytes.NewReader(sdk.request(n - 1).body))
		var g got
		if r.Header.Get("Content-Type") == "application/cloudevents-batch+json" {
			g.events, g.err = cehttp.NewEventsFromHTTPRequest(r)
		} else {
			var e *cloudevents.Event
			e, g.err = cehttp.NewEventFromHTTPRequest(r)
			if e != nil {
				g.events = []cloudevents.Event{*e}
			}
		}
		read <- g
		w.WriteHeader(200)
	})
	for _, c := range []struct {
		name string
		body map[string]any
	}{
		{"structured", map[string]any{"delivery_schema": "cloudevents"}},
		{"binary", map[string]any{"delivery_schema": "cloudevents-binary"}},
		{"batch", map[string]any{"delivery_schema": "cloudevents", "max_events_per_batch": 10}},
	} {
		c.body["name"], c.body["url"] = c.name, sdk.URL
		c.body["event_types"] = []string{"order." + c.name}
		b.subscribe(c.body)
		ev := map[string]any{"specversion": "1.0", "id": "o-" + c.name, "source": "/orders", "type": "order." + c.name,
			"subject": "orders/1", "time": "2026-01-05T09:00:00Z", "dataversion": "2", "data": map[string]any{"amount": 12}}
		if code, raw := b.do("POST", "/v1/events", ev, nil); code != http.StatusAccepted {
			t.Fatalf("publish: %d %s", code, raw)
		}
		var g got
		select {
		case g = <-read:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: nothing arrived", c.name)
		}
		if g.err != nil || len(g.events) != 1 {
			t.Fatalf("%s: the SDK read %d events, %v", c.name, len(g.events), g.err)
		}
		e := g.events[0]
		var data map[string]any
		if err := e.DataAs(&data); err != nil || data["amount"] != float64(12) {
			t.Fatalf("%s: data %v, %v", c.name, data, err)
		}
		if e.ID() != "o-"+c.name || e.Source() != "/orders" || e.Type() != "order."+c.name || e.Subject() != "orders/1" ||
			!e.Time().Equal(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)) || e.Extensions()["dataversion"] != "2" {
			t.Fatalf("%s: attributes %s", c.name, e.String())
		}
	}
}

// TestEventGridSchemaAndDeliveryCount: the eventgrid schema pushes an array
// of Event Grid events with the aeg-* headers; aeg-delivery-count counts
// the attempts before this one.
func TestEventGridSchemaAndDeliveryCount(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, func(n int, _ *http.Request, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(503)
			return
		}
		w.WriteHeader(200)
	})
	sub := b.subscribe(map[string]any{"name": "orders-eg", "url": rc.URL, "delivery_schema": "eventgrid",
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"10s"}, "max_attempts": 3}})
	publishData(b, "eg-1", map[string]any{"amount": 5})
	b.waitDelivery(sub, "the failed attempt", func(d delivery) bool { return d.Attempts == 1 })
	b.clk.Advance(10 * time.Second)
	b.waitDelivery(sub, "delivered", func(d delivery) bool { return d.Status == "delivered" })
	for i, want := range []string{"0", "1"} {
		r := rc.request(i)
		if r.header.Get("Aeg-Event-Type") != "Notification" || r.header.Get("Aeg-Delivery-Count") != want ||
			r.header.Get("Aeg-Subscription-Name") != "ORDERS-EG" || r.header.Get("Aeg-Metadata-Version") != "1" {
			t.Fatalf("request %d headers: %v", i, r.header)
		}
		var evs []struct {
			ID, Topic, Subject, EventType, EventTime, DataVersion, MetadataVersion string
			Data                                                                   map[string]any
		}
		if err := json.Unmarshal(r.body, &evs); err != nil || len(evs) != 1 {
			t.Fatalf("request %d body: %v %s", i, err, r.body)
		}
		e := evs[0]
		if e.ID != "eg-1" || e.Topic != "/orders" || e.Subject != "orders/eg-1" || e.EventType != "order.created" ||
			e.DataVersion != "2" || e.MetadataVersion != "1" || e.Data["amount"] != float64(5) || e.EventTime == "" {
			t.Fatalf("request %d: %+v", i, e)
		}
	}
}

// TestPubSubEnvelopeCountsAttempts: a Pub/Sub push receiver decodes the
// envelope; deliveryAttempt is 1, 2, 3 across retries and messageId stays
// the delivery's.
func TestPubSubEnvelopeCountsAttempts(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, func(n int, _ *http.Request, w http.ResponseWriter) {
		if n < 3 {
			w.WriteHeader(500)
			return
		}
		w.WriteHeader(204)
	})
	sub := b.subscribe(map[string]any{"name": "ps", "url": rc.URL, "delivery_schema": "pubsub",
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"10s"}, "max_attempts": 5}})
	publishData(b, "ps-1", map[string]any{"amount": 7})
	for k := 1; k <= 2; k++ {
		b.waitDelivery(sub, "attempt "+strconv.Itoa(k), func(d delivery) bool { return d.Attempts == k })
		b.clk.Advance(10 * time.Second)
	}
	d := b.waitDelivery(sub, "delivered", func(d delivery) bool { return d.Status == "delivered" })
	for i := 0; i < 3; i++ {
		var env struct {
			Message struct {
				Data        string            `json:"data"`
				Attributes  map[string]string `json:"attributes"`
				MessageID   string            `json:"messageId"`
				PublishTime time.Time         `json:"publishTime"`
			} `json:"message"`
			Subscription    string `json:"subscription"`
			DeliveryAttempt int    `json:"deliveryAttempt"`
		}
		r := rc.request(i)
		if err := json.Unmarshal(r.body, &env); err != nil {
			t.Fatalf("request %d: %v %s", i, err, r.body)
		}
		data, _ := base64.StdEncoding.DecodeString(env.Message.Data)
		if env.DeliveryAttempt != i+1 || env.Message.MessageID != d.ID || string(data) != `{"amount":7}` ||
			env.Message.Attributes["id"] != "ps-1" || env.Message.Attributes["type"] != "order.created" ||
			env.Subscription != "accounts/acc_default/subscriptions/ps" || !env.Message.PublishTime.Equal(start) {
			t.Fatalf("request %d envelope: %+v (data %s)", i, env, data)
		}
	}
}

// TestDataSchemaSendsTheData: the data schema's body is the event's data
// with its content type; binary mode sends ce-* headers.
func TestDataSchemaSendsTheData(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	sub := b.subscribe(map[string]any{"name": "raw", "url": rc.URL, "delivery_schema": "data"})
	publishData(b, "d-1", map[string]any{"amount": 9})
	eventually(t, "the push", func() bool { return rc.count() == 1 })
	r := rc.request(0)
	if string(r.body) != `{"amount":9}` || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("data schema: %s %v", r.body, r.header)
	}
	// The signature covers the exact bytes sent, whatever the schema.
	if err := verifyWith(t, secretOf(b, sub).Secret, r); err != nil {
		t.Fatalf("the data schema's push does not verify: %v", err)
	}
}

// TestEventGridPublisher: a publisher written for an Event Grid topic posts
// an array of Event Grid events unchanged; they become CloudEvents (source:
// the topic, else the account).
func TestEventGridPublisher(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(200))
	b.subscribe(map[string]any{"name": "ce", "url": rc.URL})
	body := []byte(`[{"id":"eg-a","subject":"/orders/1","eventType":"Contoso.Order.Created","eventTime":"2026-01-05T09:00:00Z",
		"data":{"amount":3},"dataVersion":"1.0"},
		{"id":"eg-b","topic":"/subscriptions/x/topics/orders","subject":"/orders/2","eventType":"Contoso.Order.Created",
		"eventTime":"2026-01-05T09:00:01Z","data":{"amount":4},"dataVersion":"1.0"}]`)
	var res struct{ Events []struct{ ID, Source string } }
	if code, raw := b.do("POST", "/v1/events", body, &res); code != 202 || len(res.Events) != 2 {
		t.Fatalf("publish Event Grid events: %d %s", code, raw)
	}
	if res.Events[0].Source != "/accounts/acc_default" || res.Events[1].Source != "/subscriptions/x/topics/orders" {
		t.Fatalf("sources: %+v", res.Events)
	}
	eventually(t, "both pushed", func() bool { return rc.count() == 2 })
	var ce map[string]any
	for i := 0; i < 2; i++ {
		if err := json.Unmarshal(rc.request(i).body, &ce); err != nil {
			t.Fatal(err)
		}
		if ce["type"] != "Contoso.Order.Created" || ce["dataversion"] != "1.0" || ce["specversion"] != "1.0" {
			t.Fatalf("pushed CloudEvent: %v", ce)
		}
	}
}
