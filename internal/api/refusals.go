package api

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herald-events/herald/internal/clock"
)

// RefusalLogInterval is the least time between two warn lines of requests
// refused (503): while the store is away (its database stopped, its disk
// full) every request that needs it is refused, thousands a second under
// load, and each would otherwise be a line.
const RefusalLogInterval = 10 * time.Second

// The messages of refusalLog's lines (docs/monitoring.md).
const (
	refusedLine = "requests refused (503)"
	backLine    = "store back: requests answered again after refusals"
)

// refusalLog coalesces the log lines of requests answered 503 (the store
// away, too many waiting consumers, subscriptions changing under a
// publish: a refusal that passes by itself). The first refusal after a
// quiet interval is a warn line at once ("requests refused", refused=1);
// later ones are counted, and the first refusal RefusalLogInterval or more
// after the last line writes one line with the count since it. When the
// API answers again (answered: a 2xx of a route that needs the store) after
// refusals a line told of, one info line says how many requests were
// refused since the first. So refusals write at most one warn line and one
// info line per interval, however many there are; each refused request
// still has its own request line at debug (logRequests).
type refusalLog struct {
	log   *slog.Logger
	clock clock.Clock
	// refusing is outage > 0, read without mu: answered, called for every
	// 2xx answer (the publish path's included), takes no lock while nothing
	// was refused.
	refusing atomic.Bool

	mu        sync.Mutex
	last      time.Time // of the last warn line (zero: none yet)
	pending   int       // refused since the last warn line, not in one yet
	outage    int       // refused since the first refusal of this outage
	announced bool      // a warn line told of this outage
}

// refused counts a request answered 503 and writes a warn line when one is
// due.
func (l *refusalLog) refused(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	l.refusing.Store(true)
	l.outage++
	l.pending++
	if !l.last.IsZero() && now.Sub(l.last) < RefusalLogInterval {
		return
	}
	attrs := []slog.Attr{slog.Int("refused", l.pending), slog.String("method", r.Method), slog.String("path", r.URL.Path)}
	if !l.last.IsZero() {
		attrs = append(attrs, slog.Duration("since_last_line", now.Sub(l.last)))
	}
	l.log.LogAttrs(r.Context(), slog.LevelWarn, refusedLine, attrs...)
	l.last, l.pending, l.announced = now, 0, true
}

// answered notes a request of a route that needs the store answered 2xx
// (answersAgain): an outage a line told of is over, and one info line says
// so. Refusals no line told of yet stay pending, for the next warn line.
func (l *refusalLog) answered(r *http.Request) {
	if !l.refusing.Load() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.outage == 0 {
		return
	}
	if l.announced {
		l.log.LogAttrs(r.Context(), slog.LevelInfo, backLine, slog.Int("refused", l.outage))
		l.pending = 0
	}
	l.outage, l.announced = 0, false
	l.refusing.Store(false)
}

// answersAgain reports whether a 2xx answer to r shows the store answering:
// the API's /v1/ and Event Grid routes and /readyz need it (GET /healthz,
// GET /openapi.yaml, GET /metrics and the console's sign-in page answer
// without it, so they say nothing of it).
func answersAgain(r *http.Request) bool {
	p := r.URL.Path
	return strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/topics/") || p == "/readyz"
}
