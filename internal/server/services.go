package server

import (
	"context"

	"github.com/herald-events/herald/internal/startstop"
)

// services returns the process's long-running services in the order Start
// starts them; Close stops them in the reverse order, which keeps these
// rules: the background work that feeds the delivery path (the clean-up,
// the change feed, the catalog reload, the event types' refresh, the
// authenticator's rechecks, the
// validator, the job runner) ends before the pipeline, and the pipeline before the
// operational events publisher, so that the events of its last attempts
// are published before the store closes; the tracer provider (tracing on)
// comes first, so it stops last and flushes every span the others ended.
func (s *Server) services() []startstop.Service {
	reload := s.newCatalogReload()
	var svcs []startstop.Service
	if s.Tracing != nil {
		svcs = append(svcs, s.Tracing)
	}
	svcs = append(svcs, s.ops, s.Pipeline, s.Validator)
	svcs = append(svcs, s.accounts) // Auth, or the accounts' cache with Auth off
	svcs = append(svcs, reload, s.EventTypes)
	if f, ok := s.Store.(changeFeed); ok {
		svcs = append(svcs, &feed{store: f, reload: reload, healthChanged: s.Pipeline.Scheduler.HealthChanged})
	}
	return append(svcs, s.Jobs, s.Sources, s.newCleanup())
}

// Start starts the services (see services). Their context is ctx:
// cancelling it stops them all at once, out of the order Close keeps, so
// give one that lasts as long as the server (herald serve does) and stop
// the server with Close. A service that fails to start stops those
// started before it, and Start returns its error.
func (s *Server) Start(ctx context.Context) error {
	for i, svc := range s.svcs {
		if err := svc.Start(ctx); err != nil {
			stopAll(s.svcs[:i])
			return err
		}
	}
	return nil
}

// stopAll stops services in the reverse of their order.
func stopAll(svcs []startstop.Service) {
	for i := len(svcs) - 1; i >= 0; i-- {
		svcs[i].Stop()
	}
}

// Loops returns the services' loops: the services that sleep on
// Config.Clock between rounds (tests read their signals). Each service
// that runs loops lists them itself.
func (s *Server) Loops() []*startstop.Loop {
	var loops []*startstop.Loop
	for _, svc := range s.svcs {
		switch svc := svc.(type) {
		case *startstop.Loop:
			loops = append(loops, svc)
		case interface{ Loops() []*startstop.Loop }:
			loops = append(loops, svc.Loops()...)
		}
	}
	return loops
}
