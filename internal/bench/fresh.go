package bench

import (
	"context"
	"fmt"
)

// freshRuns runs phase once per name on e, each run after the first on a fresh
// server (env.restart), and returns the phases that published something,
// in order. It stops at the first error, returning it with the phases so
// far.
func freshRuns(ctx context.Context, e *env, names []string, phase func(i int, name string) (*PhaseResult, error)) ([]PhaseResult, error) {
	var phases []PhaseResult
	for i, name := range names {
		if i > 0 {
			if err := e.restart(ctx); err != nil {
				return phases, fmt.Errorf("%s: a fresh server: %w", name, err)
			}
		}
		ph, err := phase(i, name)
		if ph != nil {
			phases = append(phases, *ph)
		}
		if err != nil {
			return phases, err
		}
	}
	return phases, nil
}

// spreadPhase publishes l spread over rs (spread), waits until every
// event is received and nothing is pending, and adds the phase to res. It
// returns the phase (nil when nothing was published) and how many
// deliveries the server answered the publishes made.
func (e *env) spreadPhase(ctx context.Context, res *Result, name string, l *load, rs []*Receiver) (*PhaseResult, int64, error) {
	p, lat := spread(name, l, rs)
	p.settle = true
	pr, err := e.run(ctx, p)
	if pr == nil || pr.load.Accepted == 0 {
		return nil, 0, err
	}
	ph := pr.result(name, rs, l.events, lat)
	res.Phases = append(res.Phases, ph)
	return &ph, pr.load.Deliveries, err
}

// typedReceivers subscribes n receivers, the k-th to typeName(k) (a
// phase's errors name it).
func typedReceivers(ctx context.Context, e *env, name string, n int) ([]*Receiver, error) {
	rs := make([]*Receiver, n)
	for k := range rs {
		r, err := e.pushTo(ctx, subscription{Name: fmt.Sprintf("ep-%02d", k), EventTypes: []string{typeName(k)}}, false)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rs[k] = r
	}
	return rs, nil
}
