package console

import (
	"net/http"
	"strconv"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/hold"
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

// heldScan is the most pending deliveries heldCounts reads: one page.
const heldScan = store.MaxLimit

// heldCounts says how many pending deliveries each endpoint circuit state
// holds ("11 held by endpoint probation"), for the backlog line. The store
// keeps no count by endpoint, so it reads the heldScan newest pending
// deliveries (every account's) and their endpoints (hold.Reader): exact
// when pending, the backlog's count of them, is at most heldScan, and said
// to be of the newest heldScan otherwise. The overview reads it only when
// some endpoint is not enabled.
func (p *overviewPages) heldCounts(w http.ResponseWriter, r *http.Request, v *visit, pending int64) ([]string, bool) {
	ds, _, err := p.store.ListDeliveries(r.Context(), store.DeliveryFilter{Status: delivery.StatusPending, Page: store.Page{Limit: heldScan}})
	if err != nil {
		p.storeError(w, r, v, err)
		return nil, false
	}
	hr := holdReader(r.Context(), p.store, p.live, p.now())
	counts := map[string]int{}
	for _, d := range ds {
		if by := hr.Of(d).By; by != "" && by != hold.RateLimit {
			counts[by]++
		}
	}
	var out []string
	for _, st := range []health.State{health.Probation, health.Disabled, health.Frozen} {
		if n := counts[hold.EndpointPrefix+string(st)]; n > 0 {
			out = append(out, strconv.Itoa(n)+" held by endpoint "+string(st))
		}
	}
	if len(out) > 0 && pending > heldScan {
		out = append(out, "of the "+strconv.Itoa(heldScan)+" newest")
	}
	return out, true
}
