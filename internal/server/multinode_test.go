package server_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
)

// TestHealthIsSharedAcrossNodes: two processes on one PostgreSQL database.
// A 410 seen by node A disables the endpoint on node B within one flush
// interval (a state change on one node governs all nodes within 2 s), the
// operational event is emitted once, and enabling it through
// node B re-enables it on A.
func TestHealthIsSharedAcrossNodes(t *testing.T) {
	url := pgtest.SchemaURL(t)
	onPG := func(c *server.Config) { c.Store = url; c.CatalogReload = time.Second }
	a := setup(t, onPG)
	b := setup(t, onPG)
	ops := a.opsReceiver("herald.endpoint.disabled", "herald.endpoint.enabled")
	rc, failing := switchable(t, http.StatusGone, true)
	sub := a.subscribe(map[string]any{"name": "gone", "url": rc.URL, "event_types": []string{"t"}})
	ep := a.endpointOf(sub)

	a.publish("e1", "t")
	eventually(t, "node A disables the endpoint and merges that into the store", func() bool {
		stored, err := a.srv.Store.GetEndpoint(t.Context(), ep)
		return err == nil && stored.Health.State == "disabled"
	})
	// Node B learns it at its next flush tick (1 s on its clock).
	b.clk.Advance(time.Second)
	eventually(t, "node B sees it disabled", func() bool { return b.endpoint(ep).State == "disabled" })
	if e := b.endpoint(ep); !e.NextProbeAt.Equal(start.Add(10 * time.Minute)) {
		t.Fatalf("node B's view: %+v", e)
	}
	// B's catalog learns the subscription; a publish to B is held, not sent.
	b.clk.Advance(time.Second)
	eventually(t, "node B knows the subscription", func() bool { return b.srv.Catalog.Get(sub) != nil })
	b.publish("e2", "t")
	b.settle()
	if rc.count() != 1 {
		t.Fatalf("node B sent to a disabled endpoint: %d requests", rc.count())
	}

	failing.Store(false)
	var e endpointRes
	if code, raw := b.do("POST", "/v1/endpoints/"+ep+"/enable", nil, &e); code != 200 || e.State != "enabled" {
		t.Fatalf("enable on B: %d %s", code, raw)
	}
	a.clk.Advance(time.Second) // the enable is in the store before the API answers
	eventually(t, "node A sees it enabled", func() bool { return a.endpoint(ep).State == "enabled" })
	// e1's retry is due 10 s after its 410 (eventgrid's first gap).
	a.clk.Advance(10 * time.Second)
	b.clk.Advance(10 * time.Second)
	eventually(t, "both deliveries delivered", func() bool {
		ds := a.deliveries(sub)
		return len(ds) == 2 && ds[0].Status == "delivered" && ds[1].Status == "delivered"
	})
	eventually(t, "the two operational events", func() bool { return ops.count() >= 2 })
	a.settle()
	b.settle()
	// In the order they happened: pushes of two nodes may arrive in
	// either order.
	evs := opsEvents(t, ops)
	slices.SortFunc(evs, func(x, y map[string]any) int { return eventTime(t, x).Compare(eventTime(t, y)) })
	if len(evs) != 2 || evs[0]["type"] != "herald.endpoint.disabled" || evs[1]["type"] != "herald.endpoint.enabled" {
		t.Fatalf("want one disabled and one enabled event across both nodes, got %d: %v", len(evs), evs)
	}
}

// eventTime is a CloudEvent's time attribute.
func eventTime(t *testing.T, ev map[string]any) time.Time {
	t.Helper()
	s, _ := ev["time"].(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("event %v: time %q: %v", ev["id"], s, err)
	}
	return at
}
