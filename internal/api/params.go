package api

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/health"
)

// param is a query parameter a route takes. A route's declaration
// (route.query, with account_id for the routes whose access takes it) is
// the one list of the parameters it reads: checkParams refuses any other,
// the handlers read them through these values, and openapi_test.go checks
// that openapi.yaml documents exactly these on the route's operation.
type param struct {
	name string
	// values, when not nil, are the only values it takes (a filter of a
	// fixed set of values).
	values []string
	// id, when set, is the kind of id it takes: a value not of that kind's
	// shape is refused, saying where to find one (idKind.why).
	id *idKind
}

// The query parameters of the API. An empty value is no value: a filter
// given as "?status=" filters nothing (account_id excepted: see authorize).
var (
	accountParam = param{name: "account_id"}
	limitParam   = param{name: "limit"}
	cursorParam  = param{name: "cursor"}
	// The filters of the lists.
	subscriptionFilter = param{name: "subscription_id", id: &subscriptionIDs}
	statusFilter       = param{name: "status", values: valueNames(delivery.Statuses)}
	stateFilter        = param{name: "state", values: valueNames(health.States)} // an endpoint's
	eventFilter        = param{name: "event_id"}                                 // producers choose event ids: no shape
	urlFilter          = param{name: "url"}
	orderingKeyFilter  = param{name: "ordering_key"} // an event's partitionkey: no shape
	nameFilter         = param{name: "name"}
	// codeParam is the validation URL's code (confirmValidation).
	codeParam = param{name: "code"}
	// Event Grid's (eventgrid.go): api-version takes any value (Herald
	// serves one version of each API); the others are a receive's and a
	// release's.
	apiVersionParam   = param{name: "api-version"}
	maxEventsParam    = param{name: "maxEvents"}
	maxWaitTimeParam  = param{name: "maxWaitTime"}
	releaseDelayParam = param{name: "releaseDelayInSeconds", values: secondsOf(releaseDelays)}
)

// secondsOf returns durations as whole seconds ("10").
func secondsOf(ds []time.Duration) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = strconv.Itoa(int(d / time.Second))
	}
	return out
}

// valueNames returns the names of a fixed set of values, in its order.
func valueNames[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// listParams returns the query parameters of a list: its filters, then
// limit and cursor (page).
func listParams(filters ...param) []param {
	return append(slices.Clip(filters), limitParam, cursorParam)
}

// in returns the parameter's value in the request's query ("" when absent).
func (p param) in(r *http.Request) string { return r.URL.Query().Get(p.name) }

// params returns the query parameters rt takes: account_id when its access
// reads it (authorize), then those it declares.
func (rt route) params() []param {
	if rt.access.takesAccount() {
		return append([]param{accountParam}, rt.query...)
	}
	return rt.query
}

// checkParams runs h for requests whose query rt takes, and answers 400
// naming the parameter otherwise: one rt does not take (the detail lists
// those it does, with the likely one for a near miss), one given more than
// once, a value not among a filter's values, or a value that cannot be an
// id of the kind the parameter takes.
func checkParams(rt route, h http.Handler) http.Handler {
	takes := rt.params()
	var names []string
	for _, p := range takes {
		names = append(names, p.name)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		given := make([]string, 0, len(q))
		for name := range q {
			given = append(given, name)
		}
		slices.Sort(given) // the same answer every time
		for _, name := range given {
			i := slices.Index(names, name)
			if i < 0 {
				invalid(w, name, unknownParam(rt, name, names))
				return
			}
			if len(q[name]) > 1 {
				invalid(w, name, "given more than once; give it once")
				return
			}
			if msg := takes[i].refuses(q.Get(name)); msg != "" {
				invalid(w, name, msg)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// refuses returns why the parameter does not take the value v, or "".
func (p param) refuses(v string) string {
	switch {
	case v == "":
	case p.values != nil && !slices.Contains(p.values, v):
		return "must be one of " + strings.Join(p.values, ", ") + ", not " + quoteHeader(v)
	case p.id != nil && !p.id.fits(v):
		return "takes " + p.id.article() + " id, and " + quoteHeader(v) + " is not one " + p.id.why(v)
	}
	return ""
}

// unknownParam is the detail of the 400 for a query parameter rt does not
// take.
func unknownParam(rt route, name string, names []string) string {
	d := "unknown query parameter " + quoteHeader(name) + ": "
	if near := nearest(name, names); near != "" {
		d += "did you mean " + near + "? "
	}
	if len(names) == 0 {
		return d + rt.pattern + " takes no query parameters"
	}
	return d + rt.pattern + " takes " + strings.Join(names, ", ")
}

// nearest returns the name of names that name was likely meant as, or ""
// when none is: the same but for letter case, one that starts or ends with
// it or that it starts or ends with (the shorter having four letters or
// more: "subscription" for subscription_id, "next_cursor" for cursor), or
// one at most two edits away ("state" for status). Of several, the fewest
// edits away.
func nearest(name string, names []string) string {
	best, bestEdits := "", 3
	lower := strings.ToLower(name)
	for _, n := range names {
		short, long := lower, n
		if len(short) > len(long) {
			short, long = long, short
		}
		e := edits(lower, n)
		related := lower == n || len(short) >= 4 && (strings.HasPrefix(long, short) || strings.HasSuffix(long, short))
		if (related || e <= 2 && len(short) >= 4) && (best == "" || e < bestEdits) {
			best, bestEdits = n, e
		}
	}
	return best
}

// edits returns the Levenshtein distance between a and b, in bytes (the
// parameter names are ASCII).
func edits(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
