package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/console"
	"github.com/herald-events/herald/internal/server"
)

// TestPortalEventTypesPageIsSharedPerVersion: the portal's event types
// page reads and renders the catalog once per catalog version, whatever
// the requests and sessions (TypesBuilt emits each build): three requests
// of two sessions build it once, and a catalog write makes the next one
// build it again, showing the new type. An account whose
// settings.portal_event_types names an archived type and one the catalog
// lacks is served from the same build (the archived type described, the
// other "Not described"), escaped as before.
func TestPortalEventTypesPageIsSharedPerVersion(t *testing.T) {
	dir, url := testStore(t)
	var portal *console.Portal
	n := newNode(t, dir, url, clock.NewFake(start), false, func(s *server.Server) {
		portal = s.API.PortalLinks.(*console.Portal)
		portal.TestSignals.TypesBuilt.Init(t)
	})
	built := func(want int) {
		t.Helper()
		got := 0
		for {
			select {
			case <-portal.TestSignals.TypesBuilt.C():
				got++
				continue
			default:
			}
			break
		}
		if got != want {
			t.Fatalf("the page's shared part was built %d times; want %d", got, want)
		}
	}
	n.must(http.StatusCreated, adminKey, "POST", "/v1/event-types", map[string]any{"name": "order.placed",
		"description": "An <order> was placed.", "schemas": map[string]any{"1": map[string]any{"type": "object", "title": "<b>placed</b>"}}})
	n.must(http.StatusCreated, adminKey, "POST", "/v1/event-types", map[string]any{"name": "order.old"})
	n.must(http.StatusOK, adminKey, "DELETE", "/v1/event-types/order.old", nil)
	shop, _, shopKey := n.tenant("shop", "account")
	other, _, otherKey := n.tenant("other", "account")
	_ = shop
	a, b := openPortal(n, portalLink(n, shopKey, map[string]any{})), openPortal(n, portalLink(n, otherKey, map[string]any{}))
	for _, ck := range []*http.Cookie{a, b, a} {
		p := n.get("/portal/event-types", ck)
		if !strings.Contains(p.body, `id="type-order.placed"`) || !strings.Contains(p.body, "&#34;title&#34;") ||
			!strings.Contains(p.body, "An &lt;order&gt; was placed.") || strings.Contains(p.body, "order.old") {
			t.Fatalf("the event types page:\n%.3000s", p.body)
		}
	}
	built(1)
	n.must(http.StatusCreated, adminKey, "POST", "/v1/event-types", map[string]any{"name": "order.shipped"})
	if p := n.get("/portal/event-types", b); !strings.Contains(p.body, `id="type-order.shipped"`) {
		t.Fatalf("after a catalog write the page does not show the new type:\n%.3000s", p.body)
	}
	built(1)
	n.must(http.StatusOK, adminKey, "PATCH", "/v1/accounts/"+other, map[string]any{"settings": map[string]any{"portal_event_types": []string{"order.old", "not.there"}}})
	p := n.get("/portal/event-types", b)
	if !strings.Contains(p.body, `id="type-order.old"`) || !strings.Contains(p.body, `id="type-not.there"`) ||
		!strings.Contains(p.body, "Not described.") || strings.Contains(p.body, "order.placed") {
		t.Fatalf("the page of an account's portal_event_types:\n%.3000s", p.body)
	}
	built(0)
}
