package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Sizes of the fanout-filtered scenario.
const (
	filteredMisses   = 1000 // subscriptions whose filters never match
	filteredCreators = 8    // concurrent creators of those subscriptions
	budgetFiltered   = 0.90 // publish events/s with the misses vs. without
)

// Advanced filters of the fanout-filtered scenario: filteredHit matches
// every event of filteredData, filteredMiss(i) none.
const filteredHit = `[{"operator_type":"BoolEquals","key":"data.bench","value":true}]`

func filteredMiss(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`[{"operator_type":"StringIn","key":"data.region","values":["nowhere-%d"]}]`, i))
}

// filteredData is eventData(size) with a "region" member, so that the
// misses' StringIn compares a string rather than meeting a missing key.
func filteredData(size int) []byte { return padded(`{"bench":true,"region":"bench","pad":"`, size) }

// filteredScenario: the steady-batch load (--events, --batch a request,
// from --publishers, spread over --endpoints subscriptions, each of one
// type and filtered by a filter every event matches) run twice, each on a
// fresh server: first with filteredMisses more subscriptions to every one
// of those types whose filters never match (created before the timed
// part), then without them. The figures compare the publish throughput
// (the filters are evaluated when an event is published) and the
// deliveries/s of the two runs.
func filteredScenario(ctx context.Context, e *env, res *Result) error {
	misses := []int{filteredMisses, 0}
	phases, err := freshRuns(ctx, e, []string{"with-misses", "matching-only"}, func(i int, name string) (*PhaseResult, error) {
		return e.filteredPhase(ctx, res, name, misses[i])
	})
	if err != nil {
		return err
	}
	with, without := phases[0], phases[1]
	ratio := 0.0
	if without.EventsPerSec > 0 {
		ratio = with.EventsPerSec / without.EventsPerSec
	}
	res.figure("publish events/s, with-misses vs. matching-only", ratio*100, "%")
	if without.DeliveriesPerSec > 0 {
		res.figure("deliveries/s, with-misses vs. matching-only", with.DeliveriesPerSec/without.DeliveriesPerSec*100, "%")
	}
	res.check(fmt.Sprintf("publish throughput with %s more subscriptions whose advanced filters never match (not a budget line)", thousands(filteredMisses)),
		"≥ 90 % of without", fmt.Sprintf("%.0f %% (%s/s vs. %s/s)", ratio*100, thousands(with.EventsPerSec), thousands(without.EventsPerSec)), ratio >= budgetFiltered)
	return nil
}

// filteredPhase subscribes --endpoints receivers with filteredHit and
// misses subscriptions with filteredMiss to all their types, then
// publishes the steady-batch load and waits until every event is received
// and nothing is pending.
func (e *env) filteredPhase(ctx context.Context, res *Result, name string, misses int) (*PhaseResult, error) {
	s := e.cfg.Sizes
	rs := make([]*Receiver, s.Endpoints)
	types := make([]string, s.Endpoints)
	for k := range rs {
		types[k] = typeName(k)
		r, err := e.pushTo(ctx, subscription{Name: fmt.Sprintf("ep-%02d", k), EventTypes: []string{typeName(k)},
			AdvancedFilters: json.RawMessage(filteredHit)}, false)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rs[k] = r
	}
	if misses > 0 {
		took, err := e.createMisses(ctx, types, misses)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		res.figure(name+": subscriptions that never match", float64(misses), "")
		res.figure(name+": seconds to create them (untimed)", took.Seconds(), "s")
	}
	l := &load{prefix: prefix(e.name, name), events: s.Events, batch: s.Batch, publishers: s.Publishers, data: filteredData(s.PayloadBytes)}
	ph, deliveries, err := e.spreadPhase(ctx, res, name, l, rs)
	if ph != nil && err == nil && deliveries != int64(l.events) {
		err = fmt.Errorf("%s: the server answered %d deliveries for %d events: the filters that never match matched", name, deliveries, l.events)
	}
	return ph, err
}

// createMisses creates n subscriptions to types whose filters never match,
// all pushing to one receiver (which never hears from them).
func (e *env) createMisses(ctx context.Context, types []string, n int) (time.Duration, error) {
	start := time.Now()
	r, err := startReceiver("/hook/miss", false)
	if err != nil {
		return 0, err
	}
	e.recv = append(e.recv, r)
	var (
		next, done atomic.Int64
		wg         sync.WaitGroup
		mu         sync.Mutex
		first      error
	)
	e.prog.set(func() string {
		return fmt.Sprintf("%s: creating subscriptions that never match  %d/%d", e.name, done.Load(), n)
	})
	defer e.prog.set(nil)
	for range filteredCreators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				sub := subscription{Name: fmt.Sprintf("miss-%04d", i), URL: r.URL, EventTypes: types, AdvancedFilters: filteredMiss(i)}
				if _, err := e.api.createSubscription(ctx, sub); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					next.Store(int64(n))
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return time.Since(start), first
}
