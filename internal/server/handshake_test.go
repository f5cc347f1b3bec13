package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// subState is a subscription's state, as the handshake tests read it.
type subState struct {
	State           string    `json:"state"`
	StateReason     *string   `json:"state_reason"`
	ValidationError *string   `json:"validation_error"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// subStateOf reads a subscription's state.
func subStateOf(b *bundle, id string) subState {
	b.t.Helper()
	var s subState
	if code, raw := b.do("GET", "/v1/subscriptions/"+id, nil, &s); code != 200 {
		b.t.Fatalf("get subscription: %d %s", code, raw)
	}
	return s
}

// TestEventGridHandshake: an eventgrid subscription with validation
// eventgrid starts awaiting_validation; an event published meanwhile is
// held (not pushed); the endpoint answers the SubscriptionValidationEvent
// with its validationCode, the subscription turns active and the held event
// is pushed.
func TestEventGridHandshake(t *testing.T) {
	b := setup(t)
	var rc *receiver
	// The receiver answers from the body it recorded.
	rc = newReceiver(t, func(n int, r *http.Request, w http.ResponseWriter) {
		if r.Header.Get("Aeg-Event-Type") != "SubscriptionValidation" {
			w.WriteHeader(200)
			return
		}
		var evs []struct {
			EventType string `json:"eventType"`
			Data      struct {
				ValidationCode string `json:"validationCode"`
				ValidationURL  string `json:"validationUrl"`
			} `json:"data"`
		}
		if err := json.Unmarshal(rc.request(n-1).body, &evs); err != nil || len(evs) != 1 ||
			evs[0].EventType != "Microsoft.EventGrid.SubscriptionValidationEvent" || evs[0].Data.ValidationURL == "" {
			w.WriteHeader(400)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"validationResponse": evs[0].Data.ValidationCode})
	})
	sub := b.subscribe(map[string]any{"name": "eg", "url": rc.URL, "delivery_schema": "eventgrid", "validation": "eventgrid",
		"dynamic_headers": map[string]string{"X-Type": "type"}})
	if s := subStateOf(b, sub); s.State != "awaiting_validation" {
		t.Fatalf("state after create: %+v", s)
	}
	b.publish("held", "t")
	b.settle()
	if rc.count() != 0 {
		t.Fatalf("%d requests before the handshake", rc.count())
	}
	if p := problemOf(t, b, "POST", "/v1/subscriptions/"+sub+"/deactivate", nil, http.StatusConflict); !strings.Contains(p["detail"].(string), "awaits its endpoint's validation") {
		t.Fatalf("deactivate while awaiting validation: %v", p)
	}
	b.clk.Advance(time.Second) // the validator's round
	eventually(t, "the subscription active", func() bool { return subStateOf(b, sub).State == "active" })
	// The activation is a change of state like any other.
	if s := subStateOf(b, sub); s.StateReason == nil || *s.StateReason != "its endpoint passed the validation handshake" ||
		!s.UpdatedAt.Equal(start.Add(time.Second)) {
		t.Fatalf("activated by the handshake: %+v", s)
	}
	eventually(t, "the held event pushed", func() bool { return rc.count() == 2 })
	if h := rc.request(1).header.Get("Aeg-Event-Type"); h != "Notification" {
		t.Fatalf("the second request is %q, want the held event", h)
	}
	// Dynamic headers are the pushes' (docs/subscriptions.md), not the handshake's.
	if hs, push := rc.request(0).header["X-Type"], rc.request(1).header.Get("X-Type"); hs != nil || push != "t" {
		t.Fatalf("X-Type on the handshake %q, on the push %q; want none and t", hs, push)
	}
}

// TestEventGridValidationURL: an endpoint that does not answer the
// handshake with the code may GET the validation URL it was sent, with no
// API key; a wrong code is 404 and validates nothing.
func TestEventGridValidationURL(t *testing.T) {
	b := setup(t)
	rc := newReceiver(t, status(202)) // accepts, answers no code
	sub := b.subscribe(map[string]any{"name": "eg", "url": rc.URL, "delivery_schema": "eventgrid", "validation": "eventgrid"})
	b.clk.Advance(time.Second)
	eventually(t, "the handshake sent", func() bool { return rc.count() >= 1 })
	eventually(t, "the failure recorded", func() bool {
		s := subStateOf(b, sub)
		return s.State == "awaiting_validation" && s.ValidationError != nil && strings.Contains(*s.ValidationError, "202")
	})
	var evs []struct {
		Data struct {
			ValidationURL string `json:"validationUrl"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rc.request(0).body, &evs); err != nil || len(evs) != 1 {
		t.Fatalf("handshake body: %v %s", err, rc.request(0).body)
	}
	u, err := url.Parse(evs[0].Data.ValidationURL)
	if err != nil || !strings.HasPrefix(u.Path, "/v1/validation/"+sub) || u.Query().Get("code") == "" {
		t.Fatalf("validation URL %q", evs[0].Data.ValidationURL)
	}
	bad := u.Path + "?code=wrong"
	if code, _ := b.doAs("", "GET", bad, nil, nil); code != 404 {
		t.Fatalf("a wrong code: %d, want 404", code)
	}
	if s := subStateOf(b, sub); s.State != "awaiting_validation" {
		t.Fatalf("a wrong code validated: %+v", s)
	}
	resp, err := http.Get(b.api.URL + u.Path + "?" + u.RawQuery) // no key: the code is the secret
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET of the validation URL: %d", resp.StatusCode)
	}
	if s := subStateOf(b, sub); s.State != "active" {
		t.Fatalf("after the GET: %+v", s)
	}
}

// TestCloudEventsHandshakeRetried: a cloudevents validation is an OPTIONS
// request with WebHook-Request-Origin; an endpoint that does not allow the
// origin fails it (validation_error says why) and it is retried on the
// subscription's retry policy until the endpoint allows it.
func TestCloudEventsHandshakeRetried(t *testing.T) {
	b := setup(t)
	var allow atomic.Bool
	rc := newReceiver(t, func(_ int, r *http.Request, w http.ResponseWriter) {
		if r.Method == http.MethodOptions {
			if allow.Load() {
				w.Header().Set("WebHook-Allowed-Origin", r.Header.Get("WebHook-Request-Origin"))
			}
			w.WriteHeader(200)
			return
		}
		w.WriteHeader(200)
	})
	sub := b.subscribe(map[string]any{"name": "ce", "url": rc.URL, "validation": "cloudevents",
		"retry_policy": map[string]any{"preset": "custom", "delays": []string{"30s"}, "max_attempts": 5}})
	b.publish("held", "t")
	b.clk.Advance(time.Second)
	eventually(t, "the failed handshake recorded", func() bool {
		s := subStateOf(b, sub)
		return s.ValidationError != nil && strings.Contains(*s.ValidationError, "WebHook-Allowed-Origin")
	})
	if r := rc.request(0); r.header.Get("Webhook-Request-Origin") == "" {
		t.Fatalf("handshake headers: %v", r.header)
	}
	b.settle()
	n := rc.count()
	b.clk.Advance(10 * time.Second) // not yet due: the policy's 30 s
	b.settle()
	if rc.count() != n {
		t.Fatal("the handshake was retried before its retry policy's delay")
	}
	allow.Store(true)
	b.clk.Advance(20 * time.Second)
	eventually(t, "the subscription active", func() bool { return subStateOf(b, sub).State == "active" })
	eventually(t, "the held event pushed", func() bool { return rc.count() == n+2 })
}

// TestValidationInputIsChecked: the handshake must fit the schema, is
// chosen at creation, and its subscription's URL does not change.
func TestValidationInputIsChecked(t *testing.T) {
	b := setup(t)
	for _, c := range []struct {
		body  map[string]any
		code  int
		field string
	}{
		{map[string]any{"validation": "eventgrid"}, 422, "validation"},
		{map[string]any{"validation": "cloudevents", "delivery_schema": "pubsub"}, 422, "validation"},
		{map[string]any{"validation": "smtp"}, 400, "validation"},
	} {
		c.body["name"], c.body["url"] = "v", "http://127.0.0.1:1/"
		code, raw := b.do("POST", "/v1/subscriptions", c.body, nil)
		var p struct{ Field string }
		_ = json.Unmarshal(raw, &p)
		if code != c.code || p.Field != c.field {
			t.Errorf("%v: %d %s, want %d naming %s", c.body, code, raw, c.code, c.field)
		}
	}
	sub := b.subscribe(map[string]any{"name": "ok", "url": "http://127.0.0.1:1/", "validation": "cloudevents"})
	for _, patch := range []map[string]any{{"validation": "none"}, {"url": "http://127.0.0.1:2/"}} {
		if code, raw := b.do("PATCH", "/v1/subscriptions/"+sub, patch, nil); code != 400 {
			t.Errorf("PATCH %v: %d %s, want 400", patch, code, raw)
		}
	}
	if code, _ := b.do("POST", "/v1/subscriptions/"+sub+"/reactivate", nil, nil); code != 409 {
		t.Errorf("reactivate a subscription awaiting validation: %d, want 409", code)
	}
}
