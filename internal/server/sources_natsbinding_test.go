package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestNATSBindingRoundTrip: a Herald NATS destination publishes, in
// binary mode, to a subject a Herald NATS source reads (into another
// account, so the event does not come back to the destination): the
// attributes arrive unchanged — a subject and an extension holding a
// space, a percent and non-ASCII letters, which travel percent-encoded in
// the ce- headers (the binding's "NATS Header Values") — and so do the
// datacontenttype and the data.
func TestNATSBindingRoundTrip(t *testing.T) {
	b, _ := sourceSetup(t)
	st := newJSStream(t)
	b.subscribe(map[string]any{"name": "to-nats", "event_types": []string{"order.placed"},
		"destination": map[string]any{"type": "nats", "url": natsURL, "subject": st.subject + ".rt"}})
	tn := newTenant(b, "readers")
	rc := newReceiver(t, status(200))
	if code, raw := b.doAs(tn.accountKey, "POST", "/v1/subscriptions", map[string]any{"name": "hook", "url": rc.URL}, nil); code != http.StatusCreated {
		t.Fatalf("the reader's subscription: %d %s", code, raw)
	}
	createSource(b, map[string]any{"type": "nats", "url": natsURL, "subject": st.subject + ".rt", "stream": st.name, "account_id": tn.id})

	const odd = "50% off: Zoë & Ωmega \"quoted\""
	ev := map[string]any{"specversion": "1.0", "id": "rt-1", "source": "/shop eu", "type": "order.placed", "subject": odd,
		"tenant": odd, "datacontenttype": "application/json", "data": map[string]any{"n": 1}}
	if code, raw := b.do("POST", "/v1/events", ev, nil); code != http.StatusAccepted {
		t.Fatalf("publish: %d %s", code, raw)
	}
	eventually(t, "the event read back by the source and delivered", func() bool { return rc.count() >= 1 })
	var got map[string]any
	if err := json.Unmarshal(rc.request(0).body, &got); err != nil {
		t.Fatal(err)
	}
	data, _ := got["data"].(map[string]any)
	if got["id"] != "rt-1" || got["source"] != "/shop eu" || got["subject"] != odd || got["tenant"] != odd ||
		got["datacontenttype"] != "application/json" || data["n"] != float64(1) {
		t.Fatalf("delivered %s", rc.request(0).body)
	}
}
