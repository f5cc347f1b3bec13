package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/herald-events/herald/internal/broker/brokertest"
)

// TestBrokerDeliverySchemas: a broker subscription's delivery_schema
// eventgrid, data or pubsub makes the message's body that schema's (as
// the HTTP push's), with its content type and no CloudEvents attributes.
func TestBrokerDeliverySchemas(t *testing.T) {
	url, got := coreSubscriber(t, "orders.>")
	b := setup(t)
	for _, schema := range []string{"eventgrid", "data", "pubsub"} {
		b.subscribe(map[string]any{"name": schema, "delivery_schema": schema,
			"destination": map[string]any{"type": "nats", "url": url, "subject": "orders." + schema, "jetstream": false}})
	}
	publishOrder(b, "o1", map[string]any{"amount": 150})
	bodies := map[string]*nats.Msg{}
	for len(bodies) < 3 {
		m, err := got.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("%d of 3 messages: %v", len(bodies), err)
		}
		bodies[m.Subject] = m
	}
	var eg []struct {
		ID        string         `json:"id"`
		EventType string         `json:"eventType"`
		Data      map[string]any `json:"data"`
	}
	if m := bodies["orders.eventgrid"]; json.Unmarshal(m.Data, &eg) != nil || len(eg) != 1 || eg[0].ID != "o1" ||
		eg[0].EventType != "order" || eg[0].Data["amount"] != 150.0 || m.Header.Get("ce-id") != "" {
		t.Fatalf("eventgrid body %s, headers %v", m.Data, m.Header)
	}
	if m := bodies["orders.data"]; string(m.Data) != `{"amount":150}` || m.Header.Get("content-type") != "application/json" || m.Header.Get("ce-id") != "" {
		t.Fatalf("data body %s, headers %v", m.Data, m.Header)
	}
	var ps struct {
		Message struct {
			Data       []byte            `json:"data"`
			Attributes map[string]string `json:"attributes"`
		} `json:"message"`
	}
	if m := bodies["orders.pubsub"]; json.Unmarshal(m.Data, &ps) != nil || string(ps.Message.Data) != `{"amount":150}` ||
		ps.Message.Attributes["id"] != "o1" || m.Header.Get("ce-id") != "" {
		t.Fatalf("pubsub body %s, headers %v", m.Data, m.Header)
	}
}

// TestBrokerDeadLettersRedeliveredAndRecovered: deliveries to a broker
// that was down end dead-lettered (broker_unreachable); once it is back,
// a redeliver (e1), a recover of the subscription's window (e2) and a
// redrive of the dead letters left (e3) each publish again, as for a
// webhook.
func TestBrokerDeadLettersRedeliveredAndRecovered(t *testing.T) {
	srv := brokertest.StartNATS(t)
	url := "nats://" + srv.Addr()
	b := setup(t)
	sub := b.subscribe(map[string]any{"name": "down", "destination": map[string]any{"type": "nats", "url": url, "subject": "orders.{type}", "jetstream": false},
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"5s"}, "max_attempts": 1}})
	srv.Stop()
	var since, until time.Time
	for _, id := range []string{"e1", "e2", "e3"} {
		b.clk.Advance(time.Minute)
		if id == "e2" {
			since = b.clk.Now()
		}
		b.publish(id, "created")
		if d := waitEvent(b, sub, id, "dead_lettered"); d.LastOutcome == nil || *d.LastOutcome != "broker_unreachable" {
			t.Fatalf("%s: %+v, want dead-lettered after broker_unreachable", id, d)
		}
		if id == "e2" {
			until = b.clk.Now().Add(time.Second)
		}
	}
	srv.Start()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	got, err := nc.SubscribeSync("orders.>")
	if err != nil {
		t.Fatal(err)
	}
	next := func(want string) {
		t.Helper()
		m, err := got.NextMsg(10 * time.Second)
		if err != nil || m.Header.Get("ce-id") != want {
			t.Fatalf("want %s published again: %v %v", want, m, err)
		}
	}
	// The endpoint's circuit may be open after the failures: the clock
	// moves until a probe lets the redeliver through.
	if code, raw := b.do("POST", "/v1/deliveries/"+eventDelivery(b, sub, "e1").ID+"/redeliver", nil, nil); code != http.StatusAccepted {
		t.Fatalf("redeliver: %d %s", code, raw)
	}
	eventually(t, "e1 redelivered", func() bool {
		if eventDelivery(b, sub, "e1").Status == "delivered" {
			return true
		}
		b.settle()
		b.clk.Advance(30 * time.Second)
		return false
	})
	next("e1")
	var j jobRes
	window := map[string]any{"since": since.Format(time.RFC3339Nano), "until": until.Format(time.RFC3339Nano)}
	if code, raw := b.do("POST", "/v1/subscriptions/"+sub+"/recover", window, &j); code != http.StatusAccepted || j.Total != 1 {
		t.Fatalf("recover: %d %s", code, raw)
	}
	next("e2")
	var rd struct{ Redriven int }
	if code, raw := b.do("POST", "/v1/dead-letters/redrive", map[string]any{"subscription_id": sub}, &rd); code != http.StatusAccepted || rd.Redriven != 1 {
		t.Fatalf("redrive: %d %s", code, raw)
	}
	next("e3")
	waitEvent(b, sub, "e3", "delivered")
}
