package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/api"
)

// TestReceiveAnswersWithin4MiB: events of about 800 KB whose data is full
// of <, > and & (which a JSON encoder escapes to six bytes each unless
// told not to) are received from one pull subscription through /v1's
// receive and Event Grid's :receive in turn, up to 1000 at a time, on a
// clock that does not move (no lock ends): every answer, as read off the
// wire with its envelope, is at most api.MaxReceiveBytes (4 MiB) and holds
// as many events as fit (another of the same size would cross it) but for
// the last; every event comes exactly once, as published.
func TestReceiveAnswersWithin4MiB(t *testing.T) {
	const events = 12
	b := setup(t)
	tn := newTenant(b, "shop")
	sub := pullSubscription(b, tn.accountKey, "big")
	data := strings.Repeat(`<a href="x&y">z</a> `, 36_000)
	for i := range events {
		ev := fmt.Sprintf(`{"specversion":"1.0","id":"big-%02d","source":"/test","type":"big","data":%q}`, i, data)
		if resp, raw := b.send("POST", "/v1/events", map[string]string{"Content-Type": "application/cloudevents+json",
			"Authorization": "Bearer " + tn.pubKey}, ev); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("publish %d: %d %s", i, resp.StatusCode, raw)
		}
	}
	routes := []struct {
		name, path, body, auth, member string
	}{
		{"/v1 receive", "/v1/subscriptions/" + sub + "/receive", `{"max_events":1000}`, "Bearer " + tn.accountKey, "data"},
		{"Event Grid :receive", "/topics/shop/eventsubscriptions/big:receive?maxEvents=1000&maxWaitTime=0", "", "SharedAccessKey " + tn.accountKey, "value"},
	}
	seen := map[string]int{}
	for call := 0; len(seen) < events; call++ {
		if call == events {
			t.Fatalf("%d receives got %d of %d events", call, len(seen), events)
		}
		rt := routes[call%len(routes)]
		resp, raw := b.send("POST", rt.path, map[string]string{"Content-Type": "application/json", "Authorization": rt.auth}, rt.body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %.300s", rt.name, resp.StatusCode, raw)
		}
		var answer map[string][]struct {
			Event struct{ ID, Data string }
		}
		if err := json.Unmarshal(raw, &answer); err != nil {
			t.Fatalf("%s: %v", rt.name, err)
		}
		items := answer[rt.member]
		for _, it := range items {
			if it.Event.Data != data {
				t.Fatalf("%s: event %s with %d bytes of data, not the %d published", rt.name, it.Event.ID, len(it.Event.Data), len(data))
			}
			seen[it.Event.ID]++
		}
		t.Logf("%s: %d events in %d bytes", rt.name, len(items), len(raw))
		if len(raw) > api.MaxReceiveBytes {
			t.Errorf("%s: %d bytes with %d events, over %d", rt.name, len(raw), len(items), api.MaxReceiveBytes)
		}
		if last := len(seen) == events; len(items) == 0 || !last && len(raw)+len(raw)/len(items) <= api.MaxReceiveBytes {
			t.Errorf("%s: %d events in %d bytes: another would have fitted", rt.name, len(items), len(raw))
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s received %d times", id, n)
		}
	}
	if resp, raw := b.send("POST", routes[0].path, map[string]string{"Content-Type": "application/json", "Authorization": routes[0].auth}, routes[0].body); resp.StatusCode != http.StatusOK ||
		!strings.HasPrefix(string(raw), `{"data":[]}`) {
		t.Errorf("a receive after every event came: %d %.300s; want none (every one is locked)", resp.StatusCode, raw)
	}
}
