package console

import (
	"html/template"
	"net/http"
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
	// account (CountPending, CountQueued).
	Backlog *backlogView
}

type windowView struct {
	Name, Title                      string
	Delivered, Failed, DeadLettered  int64
	Deliveries, SuccessRate, Latency template.HTML
}

type backlogView struct{ Pending, Retrying, Queued int64 }

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
	if v.admin() {
		var bl backlogView
		var err error
		if bl.Pending, bl.Retrying, err = p.store.CountPending(r.Context()); err == nil {
			bl.Queued, err = p.store.CountQueued(r.Context())
		}
		if err != nil {
			p.storeError(w, r, v, err)
			return
		}
		view.Backlog = &bl
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
