package account_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/account"
)

// TestPortalSettings: portal_event_types and portal_frame_ancestors are
// set, kept when absent or null, emptied by []; problems name the entry.
func TestPortalSettings(t *testing.T) {
	a, err := decode[account.Input](t, `{"name":"shop","settings":{"portal_event_types":["order.paid"],
		"portal_frame_ancestors":["https://app.example.com","http://localhost:3000","https://*.shop.example"]}}`).New("acc_1", t0)
	if err != nil || !slices.Equal(a.Settings.PortalEventTypes, []string{"order.paid"}) || len(a.Settings.PortalFrameAncestors) != 3 {
		t.Fatalf("New = %+v, %v", a, err)
	}
	if err := decode[account.Input](t, `{"settings":{"failure_policy":"queue","portal_event_types":null}}`).Apply(&a); err != nil ||
		len(a.Settings.PortalEventTypes) != 1 || len(a.Settings.PortalFrameAncestors) != 3 {
		t.Fatalf("Apply without the portal settings = %+v, %v; want them kept", a, err)
	}
	if err := decode[account.Input](t, `{"settings":{"portal_event_types":[],"portal_frame_ancestors":[]}}`).Apply(&a); err != nil ||
		a.Settings.PortalEventTypes != nil || a.Settings.PortalFrameAncestors != nil {
		t.Fatalf("Apply [] = %+v, %v; want them empty", a, err)
	}
	for body, field := range map[string]string{
		`{"settings":{"portal_event_types":["a",""]}}`:                                                                      "settings.portal_event_types[1]",
		`{"settings":{"portal_event_types":["a","a"]}}`:                                                                     "settings.portal_event_types[1]",
		`{"settings":{"portal_frame_ancestors":["https://a.example/x"]}}`:                                                   "settings.portal_frame_ancestors[0]",
		`{"settings":{"portal_frame_ancestors":["https://a.example","ftp://b.example"]}}`:                                   "settings.portal_frame_ancestors[1]",
		`{"settings":{"portal_frame_ancestors":["https://a.example 'unsafe-inline'"]}}`:                                     "settings.portal_frame_ancestors[0]",
		`{"settings":{"portal_frame_ancestors":["https://a.*.example"]}}`:                                                   "settings.portal_frame_ancestors[0]",
		`{"settings":{"portal_frame_ancestors":["https://u@a.example"]}}`:                                                   "settings.portal_frame_ancestors[0]",
		`{"settings":{"portal_frame_ancestors":["https://a.example","https://a.example"]}}`:                                 "settings.portal_frame_ancestors[1]",
		`{"settings":{"portal_frame_ancestors":["` + strings.Repeat("https://a.example\",\"", 16) + `https://b.example"]}}`: "settings.portal_frame_ancestors",
	} {
		b := a
		if err := decode[account.Input](t, body).Apply(&b); err == nil || err.Field != field {
			t.Errorf("Apply(%s) = %v; want a problem naming %s", body, err, field)
		}
	}
}

// TestPortalAllows: without portal event types any list is allowed;
// with them only their types, and not every type (an empty list).
func TestPortalAllows(t *testing.T) {
	if _, ok := (account.Settings{}).PortalAllows(nil); !ok {
		t.Fatal("no portal event types: every type refused")
	}
	s := account.Settings{PortalEventTypes: []string{"a", "b"}}
	for _, c := range []struct {
		ts  []string
		bad string
	}{{[]string{"a"}, ""}, {[]string{"b", "a"}, ""}, {[]string{"a", "c"}, "c"}, {nil, "every type"}} {
		if bad, ok := s.PortalAllows(c.ts); bad != c.bad || ok != (c.bad == "") {
			t.Errorf("PortalAllows(%v) = %q, %v; want %q", c.ts, bad, ok, c.bad)
		}
	}
}
