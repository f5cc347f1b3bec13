package enginetest

import (
	"testing"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/store"
)

// testEndpointsByState: ListEndpoints with a state lists only the
// endpoints in that state, of the account asked for, in ID order across
// pages of every size; with none it lists every state.
func testEndpointsByState(t *testing.T, b *bundle) {
	acc := b.account("tenant")
	byState := map[health.State][]string{}
	for i, st := range []health.State{health.Disabled, health.Enabled, health.Frozen, health.Disabled, health.Probation, health.Disabled} {
		id := b.sub("https://state.example/" + string(rune('a'+i))).EndpointID
		h := sampleHealth(b)
		h.State = st
		setHealth(b, id, h)
		byState[st] = append(byState[st], id)
	}
	// The other account's disabled endpoint is not in the default's list.
	other := b.subIn(acc.ID, "https://state.example/a").EndpointID
	h := sampleHealth(b)
	h.State = health.Disabled
	setHealth(b, other, h)
	key := func(e endpoint.Endpoint) string { return e.ID }
	list := func(account string, st health.State) func(store.Page) ([]endpoint.Endpoint, string, error) {
		return func(p store.Page) ([]endpoint.Endpoint, string, error) {
			eps, next, err := b.s.ListEndpoints(b.ctx, account, st, p)
			for _, e := range eps {
				if e.Health.State != st {
					t.Fatalf("ListEndpoints(state %s) listed %s in %s", st, e.ID, e.Health.State)
				}
			}
			return eps, next, err
		}
	}
	for _, limit := range []int{1, 2, 10} {
		for _, st := range health.States {
			equal(t, "default account's "+string(st)+" endpoints", pageIDs(t, limit, list(account.DefaultID, st), key), sortedCopy(byState[st]))
		}
		equal(t, "every account's disabled endpoints", pageIDs(t, limit, list("", health.Disabled), key),
			sortedCopy(append([]string{other}, byState[health.Disabled]...)))
		equal(t, "the tenant's disabled endpoints", pageIDs(t, limit, list(acc.ID, health.Disabled), key), []string{other})
		equal(t, "the tenant's enabled endpoints", pageIDs(t, limit, list(acc.ID, health.Enabled), key), []string{})
	}
	all := pageIDs(t, 2, func(p store.Page) ([]endpoint.Endpoint, string, error) {
		return b.s.ListEndpoints(b.ctx, account.DefaultID, "", p)
	}, key)
	if len(all) != 6 {
		t.Fatalf("no state filter listed %d endpoints, want 6: %v", len(all), all)
	}
}
