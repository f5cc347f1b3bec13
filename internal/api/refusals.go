package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/logline"
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
	lines     logline.Coalesced
	outage    int  // refused since the first refusal of this outage
	announced bool // a warn line told of this outage
}

// refused counts a request answered 503 and writes a warn line when one is
// due.
func (l *refusalLog) refused(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refusing.Store(true)
	l.outage++
	n, since, due := l.lines.Add(l.clock.Now(), RefusalLogInterval)
	if !due {
		return
	}
	attrs := []slog.Attr{slog.Int("refused", n), slog.String("method", r.Method), slog.String("path", r.URL.Path)}
	if since > 0 {
		attrs = append(attrs, slog.Duration("since_last_line", since))
	}
	l.log.LogAttrs(r.Context(), slog.LevelWarn, refusedLine, attrs...)
	l.announced = true
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
		l.lines.Forget()
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

// capLog writes the warn line of one cap reached (a connection or receive
// refused, a connection over --max-connections), coalesced: see
// logline.Coalesced (at most one line per RefusalLogInterval). Each line says how many times the cap was reached since the
// last one ("refused"), and the attributes of the refusal that wrote it.
type capLog struct {
	log   *slog.Logger
	clock clock.Clock
	msg   string

	mu    sync.Mutex
	lines logline.Coalesced
}

func newCapLog(log *slog.Logger, msg string) *capLog {
	return &capLog{log: log, clock: clock.Real{}, msg: msg}
}

// hit counts the cap reached once, and writes a line when one is due.
func (l *capLog) hit(attrs ...slog.Attr) {
	l.mu.Lock()
	n, since, due := l.lines.Add(l.clock.Now(), RefusalLogInterval)
	l.mu.Unlock()
	if !due {
		return
	}
	attrs = append(attrs, slog.Int("refused", n))
	if since > 0 {
		attrs = append(attrs, slog.Duration("since_last_line", since))
	}
	l.log.LogAttrs(context.Background(), slog.LevelWarn, l.msg, attrs...)
}
