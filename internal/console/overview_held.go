package console

import (
	"net/http"
	"strconv"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/store"
)

// circuitShown is how many endpoints of each state the overview names;
// the endpoints page lists them all.
const circuitShown = 20

// circuitGroup is the overview's endpoints of one circuit state that is
// not enabled: the first circuitShown, More when there are others.
type circuitGroup struct {
	State     string
	Endpoints []circuitEndpoint
	More      bool
}

// circuitEndpoint is one endpoint the overview names.
type circuitEndpoint struct{ ID, URL, Reason string }

// heldEndpoints returns the endpoints of acc ("": every account) whose
// circuit is in probation, disabled or frozen, as stored, by state; false
// when it answered the store's error page.
func (p *overviewPages) heldEndpoints(w http.ResponseWriter, r *http.Request, v *visit, acc string) ([]circuitGroup, bool) {
	var groups []circuitGroup
	for _, st := range []health.State{health.Probation, health.Disabled, health.Frozen} {
		eps, next, err := p.store.ListEndpoints(r.Context(), acc, st, store.Page{Limit: circuitShown})
		if err != nil {
			p.storeError(w, r, v, err)
			return nil, false
		}
		if len(eps) == 0 {
			continue
		}
		g := circuitGroup{State: string(st), More: next != ""}
		for _, e := range eps {
			g.Endpoints = append(g.Endpoints, circuitEndpoint{ID: e.ID, URL: redact.URL(e.URL), Reason: e.Health.Reason})
		}
		groups = append(groups, g)
	}
	return groups, true
}

// heldEndpointsCounted is the most endpoints of each circuit state whose
// pending deliveries heldCounts counts: one page of ListEndpoints.
const heldEndpointsCounted = store.MaxLimit

// heldCounts says how many pending deliveries the endpoints of each
// circuit state that is not enabled hold, every account's ("11 held by
// endpoint probation"), for the backlog line. Each state's is the
// store's CountPendingOf of its endpoints, stopping at backlogCap+1
// ("over 10000 held by endpoint probation"), so it reads at most that
// many index entries and a seek per endpoint, however large their
// backlog. It is exact up to backlogCap when the state has at most
// heldEndpointsCounted endpoints; past that it counts the deliveries of
// the first heldEndpointsCounted (by ID) and says "at least". The
// endpoints of a state are one ListEndpoints page (a walk of the
// endpoints by ID, filtered by state). A rate limit's holds are not
// counted (they change with each token).
func (p *overviewPages) heldCounts(w http.ResponseWriter, r *http.Request, v *visit) ([]string, bool) {
	var out []string
	for _, st := range []health.State{health.Probation, health.Disabled, health.Frozen} {
		eps, next, err := p.store.ListEndpoints(r.Context(), "", st, store.Page{Limit: heldEndpointsCounted})
		if err == nil && len(eps) == 0 {
			continue
		}
		var n int64
		if err == nil {
			n, err = p.store.CountPendingOf(r.Context(), endpointIDs(eps), backlogCap+1)
		}
		if err != nil {
			p.storeError(w, r, v, err)
			return nil, false
		}
		if n > 0 {
			out = append(out, heldWords(n, next != "")+" held by endpoint "+string(st))
		}
	}
	return out, true
}

// heldWords is a count of held deliveries in digits: "over 10000" past
// backlogCap, "at least" before it when not every endpoint was counted.
func heldWords(n int64, partial bool) string {
	switch {
	case n > backlogCap:
		return "over " + strconv.Itoa(backlogCap)
	case partial:
		return "at least " + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

// endpointIDs returns the IDs of eps.
func endpointIDs(eps []endpoint.Endpoint) []string {
	ids := make([]string, len(eps))
	for i, e := range eps {
		ids[i] = e.ID
	}
	return ids
}
