package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/stats"
	"github.com/herald-events/herald/internal/store"
)

// The query parameters of GET /v1/stats.
var (
	windowParam    = param{name: "window", values: windowNames()}
	endpointFilter = param{name: "endpoint_id", id: &endpointIDs}
)

func windowNames() []string {
	var out []string
	for _, w := range stats.Windows {
		out = append(out, w.Name)
	}
	return out
}

// defaultWindow is the window of a request that names none.
const defaultWindow = "1h"

type statsJSON struct {
	Step   string          `json:"step"`
	Series []statsStepJSON `json:"series"`
}

type statsStepJSON struct {
	At           Time    `json:"at"`
	Delivered    int64   `json:"delivered"`
	Failed       int64   `json:"failed"`
	DeadLettered int64   `json:"dead_lettered"`
	P50MS        float64 `json:"p50_ms"`
	P99MS        float64 `json:"p99_ms"`
}

// getStats answers the account's delivery series over ?window= (default
// 1h), of one subscription or endpoint when given (404 for another
// account's), a point per step of the window (stats.Windows), zeros where
// nothing happened.
func (s *Server) getStats(w http.ResponseWriter, r *http.Request) {
	name := windowParam.in(r)
	if name == "" {
		name = defaultWindow
	}
	win, _ := stats.WindowNamed(name) // checkParams took only its values
	q := store.StatsQuery{AccountID: accountOf(r), SubscriptionID: subscriptionFilter.in(r), EndpointID: endpointFilter.in(r)}
	if !s.ownFilters(w, r, q) {
		return
	}
	rows, err := store.StatsSeries(r.Context(), s.Store, q, win, s.Clock.Now())
	if err != nil {
		s.storeError(w, r, err, "stats")
		return
	}
	out := statsJSON{Step: stepName(win), Series: make([]statsStepJSON, len(rows))}
	for i := range rows {
		row := &rows[i]
		out.Series[i] = statsStepJSON{At: timestamp(row.At), Delivered: row.Delivered, Failed: row.Failed,
			DeadLettered: row.DeadLettered, P50MS: row.Percentile(0.5), P99MS: row.Percentile(0.99)}
	}
	writeJSON(w, http.StatusOK, out)
}

// stepName is a window's step as the API writes it: "1m", "5m", "1h".
func stepName(w stats.Window) string {
	if w.Step%time.Hour == 0 {
		return strconv.Itoa(int(w.Step/time.Hour)) + "h"
	}
	return strconv.Itoa(int(w.Step/time.Minute)) + "m"
}

// ownFilters answers 404 for a subscription or endpoint filter naming one
// that is not the account's (or none), and reports whether q may be read.
func (s *Server) ownFilters(w http.ResponseWriter, r *http.Request, q store.StatsQuery) bool {
	if q.SubscriptionID != "" {
		sub, err := s.Store.GetSubscription(r.Context(), q.SubscriptionID)
		if err != nil {
			s.storeError(w, r, err, "subscription")
			return false
		}
		if !ownedBy(w, r, sub.AccountID, "subscription") {
			return false
		}
	}
	if q.EndpointID != "" {
		ep, err := s.Store.GetEndpoint(r.Context(), q.EndpointID)
		if err != nil {
			s.storeError(w, r, err, "endpoint")
			return false
		}
		return ownedBy(w, r, ep.AccountID, "endpoint")
	}
	return true
}
