package endpoint

import (
	"time"

	"github.com/herald-events/herald/internal/health"
)

// Live is the scheduler's view of the endpoints this node holds: health
// ahead of the store's by up to a second, the adaptive concurrency limit
// and the attempts in flight (scheduling.Service.Endpoint).
type Live interface {
	Endpoint(id string) (ep Endpoint, limit, inFlight int, ok bool)
}

// Status is an endpoint as the API's endpoint resource and the console
// show it: its stored identity, its health as this node's scheduler sees
// it now when it holds the endpoint (else as stored), and the failure-rate
// window's counts.
type Status struct {
	Endpoint
	// Held says this node's scheduler holds it: Limit and InFlight are its.
	Held            bool
	Limit, InFlight int
	// WindowAttempts and WindowFailures are the counts of the rolling
	// window the failure-rate rule uses (Window long).
	WindowAttempts, WindowFailures int64
	Window                         time.Duration
}

// StatusOf returns e's status at now: the live health when live (which may
// be nil) holds e, the window counts over window. A state never written is
// health.Enabled.
func StatusOf(e Endpoint, live Live, window time.Duration, now time.Time) Status {
	st := Status{Window: window}
	if live != nil {
		if l, limit, n, ok := live.Endpoint(e.ID); ok {
			e.Health, e.UpdatedAt, e.Version = l.Health, l.UpdatedAt, l.Version
			st.Held, st.Limit, st.InFlight = true, limit, n
		}
	}
	if e.Health.State == "" {
		e.Health.State = health.Enabled
	}
	st.Endpoint = e
	st.WindowAttempts, st.WindowFailures = e.Health.Window.Counts(window, now)
	return st
}
