package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

var endpointTests = []test{
	{"new endpoints are enabled", testEndpointDefaults},
	{"health round-trips", testHealthRoundTrip},
	{"list pages and unknown IDs", testEndpointList},
}

func testEndpointDefaults(t *testing.T, b *bundle) {
	sub := b.sub("https://a.example/hook")
	e, err := b.s.GetEndpoint(b.ctx, sub.EndpointID)
	if err != nil {
		t.Fatal(err)
	}
	if e.ID != sub.EndpointID || e.URL != sub.URL || e.Health.State != health.Enabled || e.Health.ConsecutiveFailures != 0 {
		t.Fatalf("new endpoint: %+v", e)
	}
	all, err := b.s.AllEndpoints(b.ctx)
	if err != nil || len(all) != 1 || all[0].ID != sub.EndpointID {
		t.Fatalf("AllEndpoints: %+v %v", all, err)
	}
}

// sampleHealth is a health with every field set.
func sampleHealth(b *bundle) health.Health {
	var w health.Window
	w.Add(time.Hour, b.at(-30*time.Minute), false)
	w.Add(time.Hour, b.at(-30*time.Minute), true)
	w.Add(time.Hour, b.at(-time.Minute), false)
	return health.Health{
		State: health.Probation, ConsecutiveFailures: 12, Window: w,
		FirstAttemptAt: b.at(-2 * time.Hour), LastSuccessAt: b.at(-time.Hour), LastFailureAt: b.at(-time.Minute),
		DisabledAt: b.at(-90 * time.Minute), FrozenAt: b.at(-80 * time.Minute),
		NextProbeAt: b.at(20 * time.Second), ProbationDelay: 20 * time.Second,
	}
}

func testHealthRoundTrip(t *testing.T, b *bundle) {
	sub := b.sub("https://a.example/hook")
	h := sampleHealth(b)
	if err := b.s.SaveHealth(b.ctx, []store.Endpoint{{ID: sub.EndpointID, Health: h, UpdatedAt: b.now}, {ID: "ep_unknown", Health: h}}); err != nil {
		t.Fatal(err)
	}
	e, err := b.s.GetEndpoint(b.ctx, sub.EndpointID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(norm(e.Health), norm(h)) || !e.UpdatedAt.Equal(b.now) || e.URL != sub.URL {
		t.Fatalf("health round trip:\n got %+v\nwant %+v", e.Health, h)
	}
	if a, f := e.Health.Window.Counts(time.Hour, b.now); a != 3 || f != 2 {
		t.Fatalf("window counts %d/%d, want 2/3", f, a)
	}
	if _, err := b.s.GetEndpoint(b.ctx, "ep_unknown"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SaveHealth created an unknown endpoint: %v", err)
	}
}

func testEndpointList(t *testing.T, b *bundle) {
	want := map[string]bool{}
	for _, u := range []string{"https://a.example/1", "https://a.example/2", "https://a.example/3"} {
		want[b.sub(u).EndpointID] = true
	}
	b.sub("https://a.example/1") // a second subscription to the same URL adds no endpoint
	seen := map[string]bool{}
	cursor := ""
	for i := 0; i < 5; i++ {
		eps, next, err := b.s.ListEndpoints(b.ctx, store.Page{Cursor: cursor, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range eps {
			if seen[e.ID] {
				t.Fatalf("endpoint %s listed twice", e.ID)
			}
			seen[e.ID] = true
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("listed %v, want %v", seen, want)
	}
	if _, err := b.s.GetEndpoint(b.ctx, "ep_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetEndpoint(unknown): %v", err)
	}
}
