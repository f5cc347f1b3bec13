package console

import (
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/stats"
	"github.com/herald-events/herald/internal/store"
)

// overviewPages is the console's home: charts of the delivery rollups
// (store.StatsStore) over the last hour and day, and the backlog.
type overviewPages struct {
	base
	clockNow func() time.Time
}

// overviewWindows are the windows the overview charts: the last hour, a
// point a minute, and the last day, a point per 5 minutes (stats.Windows).
var overviewWindows = []string{"1h", "24h"}

// overviewView is what overview.html shows.
type overviewView struct {
	Accounts []account.Account // the admin's choice; none for an account key
	Account  string            // "": every account (an admin's)
	Windows  []windowView
	// Backlog is shown to admins only: the store counts it across every
	// account, up to backlogCap (CountBacklog).
	Backlog *backlogView
	// Circuits are the endpoints not enabled (heldEndpoints), by state.
	Circuits []circuitGroup
}

type windowView struct {
	Name, Title                      string
	Delivered, Failed, DeadLettered  int64
	Deliveries, SuccessRate, Latency template.HTML
}

// backlogCap is where the overview's backlog counts stop. Each of them
// (pending deliveries of each lane, queued ones) reads at most
// backlogCap+1 index entries (store's CountBacklog: TestBacklogPlans on
// PostgreSQL, TestBacklogPlan on SQLite), so the overview costs the same
// with a million deliveries waiting as with none, and a count above the
// cap shows as "over 10000". An exact count reads an entry per waiting
// delivery: 70 ms for a million pending on PostgreSQL (see
// internal/store/postgres/postgres.go), too slow for a page.
//
// The /metrics gauges herald_deliveries_pending and
// herald_deliveries_queued (internal/api/metrics.go) keep exact counts:
// a gauge must be a number to graph and alert on, a scrape comes every
// 15 s or more and each node counts at most once per 5 s
// (pendingCacheFor), off any page's path.
const backlogCap = 10_000

// backlogView is the backlog as overview.html shows it: each count in
// digits, or "over 10000" when a count it adds up went past backlogCap.
// Pending counts every pending delivery (both lanes), Retrying those of
// them that wait to retry.
type backlogView struct {
	Pending, Retrying, Queued string
	// Held says how many pending deliveries endpoints hold, by what
	// ("11 held by endpoint probation"); none when no endpoint is held
	// (heldCounts).
	Held []string
}

// newBacklogView shows b, counted up to backlogCap+1.
func newBacklogView(b store.Backlog) *backlogView {
	return &backlogView{Pending: backlogCount(b.Fresh, b.Retry), Retrying: backlogCount(b.Retry), Queued: backlogCount(b.Queued)}
}

// backlogCount is the sum of counts in digits, or "over <backlogCap>"
// when one of them is over it (it stopped counting there).
func backlogCount(counts ...int64) string {
	var sum int64
	for _, n := range counts {
		if n > backlogCap {
			return "over " + strconv.Itoa(backlogCap)
		}
		sum += n
	}
	return strconv.FormatInt(sum, 10)
}

// overview answers the overview of the account the request may see (an
// admin's: the one ?account_id= names, or every account).
func (p *overviewPages) overview(w http.ResponseWriter, r *http.Request, v *visit) {
	accountID, ok := p.accountParam(w, r, v)
	if !ok {
		return
	}
	accs, ok := p.accountChoices(w, r, v)
	if !ok {
		return
	}
	view := overviewView{Accounts: accs, Account: accountID}
	now := p.clockNow()
	for _, name := range overviewWindows {
		win, _ := stats.WindowNamed(name)
		rows, err := store.StatsSeries(r.Context(), p.store, store.StatsQuery{AccountID: accountID}, win, now)
		if err != nil {
			p.storeError(w, r, v, err)
			return
		}
		wv := windowView{Name: name, Title: "Last " + windowWords(win),
			Deliveries:  deliveriesChart("deliveries-"+name, rows, win.Step),
			SuccessRate: successChart("success-"+name, rows, win.Step),
			Latency:     latencyChart("latency-"+name, rows, win.Step)}
		for i := range rows {
			wv.Delivered, wv.Failed, wv.DeadLettered = wv.Delivered+rows[i].Delivered, wv.Failed+rows[i].Failed, wv.DeadLettered+rows[i].DeadLettered
		}
		view.Windows = append(view.Windows, wv)
	}
	var bl store.Backlog
	if v.admin() {
		var err error
		bl, err = p.store.CountBacklog(r.Context(), backlogCap+1)
		if err != nil {
			p.storeError(w, r, v, err)
			return
		}
		view.Backlog = newBacklogView(bl)
	}
	if view.Circuits, ok = p.heldEndpoints(w, r, v, accountID); !ok {
		return
	}
	if view.Backlog != nil && bl.Fresh+bl.Retry > 0 {
		if view.Backlog.Held, ok = p.heldCounts(w, r, v); !ok {
			return
		}
	}
	p.render(w, r, http.StatusOK, "overview", v, "Overview", view)
}

// windowWords is a window in words: "hour", "day", "week".
func windowWords(w stats.Window) string {
	switch w.Span {
	case time.Hour:
		return "hour"
	case 24 * time.Hour:
		return "day"
	}
	return "week"
}
