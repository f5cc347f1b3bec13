package server

import (
	"context"
	"sync"

	"github.com/herald-events/herald/internal/dispatch"
	"github.com/herald-events/herald/internal/startstop"
)

// services returns the process's long-running services in the order Start
// starts them; Close stops them in the reverse order, which keeps these
// rules: the background work that feeds the engine (the clean-up, the
// change feed, the catalog reload, the authenticator's rechecks, the
// validator) ends before the engine, and the engine before the
// operational events publisher, so that the events of its last attempts
// are published before the store closes.
func (s *Server) services() []startstop.Service {
	reload := s.newCatalogReload()
	svcs := []startstop.Service{s.ops, s.engine, s.Validator}
	if s.Auth != nil {
		svcs = append(svcs, s.Auth)
	}
	svcs = append(svcs, reload)
	if f, ok := s.Store.(changeFeed); ok {
		svcs = append(svcs, &feed{store: f, reload: reload, healthChanged: s.Engine.HealthChanged})
	}
	return append(svcs, s.newCleanup())
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

// engineService runs the dispatch engine as a startstop.Service. Its Stop
// gives the attempts in flight until the context given to stopWithin ends
// (see dispatch.Engine.Stop), and stops the engine even when it never
// started (its recorder runs from dispatch.New).
type engineService struct {
	startstop.Base
	eng *dispatch.Engine

	mu    sync.Mutex
	grace context.Context // see stopWithin; nil: until the attempts end
}

// Start starts the engine; cancelling ctx stops it as Stop does.
func (e *engineService) Start(ctx context.Context) error {
	ctx, shouldStart, started, stopped := e.StartInit(ctx)
	if !shouldStart {
		return nil
	}
	if err := e.eng.Start(ctx); err != nil {
		stopped()
		return err
	}
	go func() {
		defer stopped()
		started()
		<-ctx.Done()
		e.eng.Stop(e.graceCtx())
	}()
	return nil
}

// Stop stops the engine and waits for it.
func (e *engineService) Stop() {
	e.Base.Stop()
	e.eng.Stop(e.graceCtx()) // when it never started; else it did nothing
}

// stopWithin sets how long Stop lets the attempts in flight finish: until
// ctx ends.
func (e *engineService) stopWithin(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.grace = ctx
}

func (e *engineService) graceCtx() context.Context {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.grace == nil {
		return context.Background()
	}
	return e.grace
}

// Loops returns the engine's loops.
func (e *engineService) Loops() []*startstop.Loop { return e.eng.Loops() }
