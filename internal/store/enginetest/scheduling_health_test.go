package enginetest

import (
	"errors"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// modify calls ModifyEndpoints and fails the test on error.
func modify(b *bundle, ids []string, fn func(eps []*endpoint.Endpoint) error) []endpoint.Endpoint {
	b.t.Helper()
	out, err := b.s.ModifyEndpoints(b.ctx, ids, fn)
	if err != nil {
		b.t.Fatalf("ModifyEndpoints(%v): %v", ids, err)
	}
	return out
}

// setHealth writes h (and UpdatedAt b.now) to endpoint id.
func setHealth(b *bundle, id string, h health.Health) {
	b.t.Helper()
	out := modify(b, []string{id}, func(eps []*endpoint.Endpoint) error {
		for _, e := range eps {
			e.Health, e.UpdatedAt = h, b.now
		}
		return nil
	})
	if len(out) != 1 {
		b.t.Fatalf("setHealth(%s): wrote %d endpoints", id, len(out))
	}
}

// endpointIDs returns the IDs of eps (fn's argument), in order. fn may run
// on another goroutine than the test's: it must not fail the test itself.
func endpointIDs(eps []*endpoint.Endpoint) []string {
	out := []string{}
	for _, e := range eps {
		out = append(out, e.ID)
	}
	return out
}

func readEndpoint(b *bundle, id string) endpoint.Endpoint {
	b.t.Helper()
	e, err := b.s.GetEndpoint(b.ctx, id)
	if err != nil {
		b.t.Fatalf("GetEndpoint(%s): %v", id, err)
	}
	return e
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
		Reason: health.ReasonConsecutive(10),
	}
}

func testHealthRoundTrip(t *testing.T, b *bundle) {
	sub := b.sub("https://a.example/hook")
	h := sampleHealth(b)
	var seen []string
	out := modify(b, []string{sub.EndpointID, "ep_unknown"}, func(eps []*endpoint.Endpoint) error {
		seen = endpointIDs(eps)
		for _, e := range eps {
			e.Health, e.UpdatedAt = h, b.now
		}
		return nil
	})
	equal(t, "endpoints given to fn", seen, []string{sub.EndpointID})
	e := readEndpoint(b, sub.EndpointID)
	if !reflect.DeepEqual(norm(e.Health), norm(h)) || !e.UpdatedAt.Equal(b.now) || e.URL != sub.URL {
		t.Fatalf("health round trip:\n got %+v\nwant %+v", e.Health, h)
	}
	equal(t, "ModifyEndpoints result", out, []endpoint.Endpoint{e})
	if a, f := e.Health.Window.Counts(time.Hour, b.now); a != 3 || f != 2 {
		t.Fatalf("window counts %d/%d, want 2/3", f, a)
	}
	if _, err := b.s.GetEndpoint(b.ctx, "ep_unknown"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ModifyEndpoints created an unknown endpoint: %v", err)
	}
}

// testModifySeesCurrent: fn gets the endpoints as stored, what it leaves is
// written and returned as written, and another endpoint is untouched.
func testModifySeesCurrent(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	h := sampleHealth(b)
	setHealth(b, a.EndpointID, h)
	before := map[string]endpoint.Endpoint{a.EndpointID: readEndpoint(b, a.EndpointID), c.EndpointID: readEndpoint(b, c.EndpointID)}
	later := b.at(time.Minute)
	calls := 0
	given := map[string]endpoint.Endpoint{}
	out := modify(b, []string{c.EndpointID, a.EndpointID}, func(eps []*endpoint.Endpoint) error {
		calls++
		for _, e := range eps {
			given[e.ID] = *e
			if e.ID == a.EndpointID {
				e.Health.ConsecutiveFailures++
				e.Health.State = health.Disabled
				e.Health.NextProbeAt = b.at(10 * time.Minute)
				e.UpdatedAt = later
			}
		}
		return nil
	})
	if calls != 1 {
		t.Fatalf("fn called %d times, want 1", calls)
	}
	equal(t, "endpoints given to fn", given, before)
	want := before[a.EndpointID]
	want.Health.ConsecutiveFailures = h.ConsecutiveFailures + 1
	want.Health.State = health.Disabled
	want.Health.NextProbeAt = b.at(10 * time.Minute)
	want.UpdatedAt = later
	modified := readEndpoint(b, a.EndpointID)
	if modified.Version <= want.Version {
		t.Fatalf("endpoint version after ModifyEndpoints %d, before %d: want it to advance", modified.Version, want.Version)
	}
	want.Version = modified.Version
	equal(t, "modified endpoint", modified, want)
	// Written back as fn left it: only its version moves.
	untouched := readEndpoint(b, c.EndpointID)
	wantC := before[c.EndpointID]
	wantC.Version = untouched.Version
	equal(t, "untouched endpoint", untouched, wantC)
	if len(out) != 2 {
		t.Fatalf("ModifyEndpoints returned %d endpoints, want 2", len(out))
	}
	for _, e := range out {
		equal(t, "returned endpoint "+e.ID, e, readEndpoint(b, e.ID))
	}
}

var errBoom = errors.New("boom")

// testModifyError: an error from fn is returned and nothing of what fn did
// is written.
func testModifyError(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	setHealth(b, a.EndpointID, sampleHealth(b))
	before := []endpoint.Endpoint{readEndpoint(b, a.EndpointID), readEndpoint(b, c.EndpointID)}
	out, err := b.s.ModifyEndpoints(b.ctx, []string{a.EndpointID, c.EndpointID}, func(eps []*endpoint.Endpoint) error {
		for _, e := range eps {
			e.Health = health.Health{State: health.Frozen, ConsecutiveFailures: 99}
			e.UpdatedAt = b.at(time.Hour)
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) || out != nil {
		t.Fatalf("ModifyEndpoints with failing fn = %v, %v; want nil, errBoom", out, err)
	}
	equal(t, "endpoints after failed fn", []endpoint.Endpoint{readEndpoint(b, a.EndpointID), readEndpoint(b, c.EndpointID)}, before)
}

// testModifyUnknown: unknown IDs are skipped, a repeated ID is given once,
// and with no known ID fn gets nothing and nothing is written.
func testModifyUnknown(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	var seen []string
	out := modify(b, []string{"ep_unknown", a.EndpointID, a.EndpointID}, func(eps []*endpoint.Endpoint) error {
		seen = endpointIDs(eps)
		for _, e := range eps {
			e.Health.ConsecutiveFailures = 7
		}
		return nil
	})
	equal(t, "endpoints given to fn", seen, []string{a.EndpointID})
	if len(out) != 1 || out[0].ID != a.EndpointID || out[0].Health.ConsecutiveFailures != 7 {
		t.Fatalf("ModifyEndpoints returned %+v", out)
	}
	for _, ids := range [][]string{{"ep_unknown", "ep_nope"}, nil} {
		seen = nil
		out = modify(b, ids, func(eps []*endpoint.Endpoint) error {
			seen = endpointIDs(eps)
			return nil
		})
		equal(t, "endpoints given to fn", seen, []string{})
		if len(out) != 0 {
			t.Fatalf("ModifyEndpoints(%v) returned %+v", ids, out)
		}
	}
	if _, err := b.s.GetEndpoint(b.ctx, "ep_unknown"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ModifyEndpoints created an unknown endpoint: %v", err)
	}
	if e := readEndpoint(b, a.EndpointID); e.Health.ConsecutiveFailures != 7 {
		t.Fatalf("endpoint %+v", e)
	}
}

// testModifyConcurrent: two goroutines each add 1 to a counter 50 times
// with read-modify-write calls; with the endpoints locked no increment is
// lost. A second endpoint in every call overlaps the two callers' sets.
func testModifyConcurrent(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	const workers, perWorker = 2, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		ids := []string{a.EndpointID, c.EndpointID}
		if w%2 == 1 {
			ids = []string{c.EndpointID, a.EndpointID} // the other order
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWorker {
				_, err := b.s.ModifyEndpoints(b.ctx, ids, func(eps []*endpoint.Endpoint) error {
					for _, e := range eps {
						n := e.Health.ConsecutiveFailures
						runtime.Gosched() // widen the window a missing lock would leave
						e.Health.ConsecutiveFailures = n + 1
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range []string{a.EndpointID, c.EndpointID} {
		if got := readEndpoint(b, id).Health.ConsecutiveFailures; got != workers*perWorker {
			t.Fatalf("endpoint %s counter = %d, want %d (lost updates)", id, got, workers*perWorker)
		}
	}
}

func takeProbe(b *bundle, id string, now, hold time.Time, want bool) {
	b.t.Helper()
	got, err := b.s.TakeProbe(b.ctx, id, now, hold)
	if err != nil || got != want {
		b.t.Fatalf("TakeProbe(%s, now %v, hold %v) = %v, %v; want %v", id, now, hold, got, err, want)
	}
}

func testTakeProbe(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	h := sampleHealth(b) // NextProbeAt +20s
	setHealth(b, a.EndpointID, h)
	before := readEndpoint(b, a.EndpointID)
	// Not due yet.
	takeProbe(b, a.EndpointID, b.at(20*time.Second-time.Millisecond), b.at(time.Minute), false)
	equal(t, "endpoint after a refused TakeProbe", readEndpoint(b, a.EndpointID), before)
	// Due (at its very time): taken, and moved to hold; nothing else changes.
	hold := b.at(80 * time.Second)
	takeProbe(b, a.EndpointID, b.at(20*time.Second), hold, true)
	want := before
	want.Health.NextProbeAt = hold
	equal(t, "endpoint after TakeProbe", readEndpoint(b, a.EndpointID), want) // its version too
	// Held: not due again until hold.
	takeProbe(b, a.EndpointID, b.at(30*time.Second), b.at(90*time.Second), false)
	takeProbe(b, a.EndpointID, hold, b.at(140*time.Second), true)
	// No probe time set (a new endpoint): never due.
	takeProbe(b, c.EndpointID, b.at(time.Hour), b.at(2*time.Hour), false)
	if e := readEndpoint(b, c.EndpointID); !e.Health.NextProbeAt.IsZero() {
		t.Fatalf("TakeProbe set the probe time of an endpoint without one: %+v", e.Health)
	}
	// Unknown endpoint.
	takeProbe(b, "ep_unknown", b.at(time.Hour), b.at(2*time.Hour), false)
}

// testTakeProbeRace: of 20 concurrent callers for one due probe exactly one
// gets it.
func testTakeProbeRace(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	h := sampleHealth(b)
	h.NextProbeAt = b.now
	setHealth(b, a.EndpointID, h)
	const racers = 20
	var wg sync.WaitGroup
	start := make(chan struct{})
	won := make([]bool, racers)
	errs := make([]error, racers)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			won[i], errs[i] = b.s.TakeProbe(b.ctx, a.EndpointID, b.at(time.Second), b.at(time.Minute))
		}()
	}
	close(start)
	wg.Wait()
	winners := 0
	for i := range racers {
		if errs[i] != nil {
			t.Fatalf("racer %d: %v", i, errs[i])
		}
		if won[i] {
			winners++
		}
	}
	if winners != 1 {
		t.Fatalf("%d racers took the probe, want exactly 1", winners)
	}
	if e := readEndpoint(b, a.EndpointID); !e.Health.NextProbeAt.Equal(b.at(time.Minute)) {
		t.Fatalf("NextProbeAt = %v, want the hold %v", e.Health.NextProbeAt, b.at(time.Minute))
	}
}

func testEndpointChanges(t *testing.T, b *bundle) {
	a, c := b.sub("https://a.example/hook"), b.sub("https://c.example/hook")
	eps, v0, err := b.s.EndpointChanges(b.ctx, 0)
	if err != nil || v0 <= 0 {
		t.Fatalf("EndpointChanges(0): %v, %d, %v", eps, v0, err)
	}
	if eps, v, err := b.s.EndpointChanges(b.ctx, v0); err != nil || len(eps) != 0 || v != v0 {
		t.Fatalf("EndpointChanges at the current version: %d endpoints, version %d, %v", len(eps), v, err)
	}
	modify(b, []string{a.EndpointID}, func(eps []*endpoint.Endpoint) error {
		eps[0].Health.State = health.Probation
		eps[0].Health.NextProbeAt = b.at(time.Second)
		return nil
	})
	eps, v1, err := b.s.EndpointChanges(b.ctx, v0)
	if err != nil || v1 <= v0 || len(eps) != 1 || eps[0].ID != a.EndpointID || eps[0].Health.State != health.Probation {
		t.Fatalf("after ModifyEndpoints: %+v, version %d (was %d), %v; want endpoint a in probation", eps, v1, v0, err)
	}
	equal(t, "changed endpoint", eps[0], readEndpoint(b, a.EndpointID))
	// Taking a probe is not a change others must adopt.
	takeProbe(b, a.EndpointID, b.at(time.Second), b.at(time.Minute), true)
	if eps, v2, err := b.s.EndpointChanges(b.ctx, v1); err != nil || len(eps) != 0 || v2 != v1 {
		t.Fatalf("after TakeProbe: %+v, version %d (was %d), %v; want no change", eps, v2, v1, err)
	}
	// Several endpoints in one write: each reported once.
	modify(b, []string{a.EndpointID, c.EndpointID}, func([]*endpoint.Endpoint) error { return nil })
	eps, v3, err := b.s.EndpointChanges(b.ctx, v1)
	if err != nil || v3 <= v1 || len(eps) != 2 {
		t.Fatalf("after modifying two: %+v, version %d (was %d), %v", eps, v3, v1, err)
	}
}
