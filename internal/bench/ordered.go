package bench

import (
	"context"
	"fmt"
	"strconv"
)

// orderedKey returns the partitionkey of event n among keys keys: n mod
// keys, so consecutive events of one key are keys events apart.
func orderedKey(keys int) func(n int) string {
	return func(n int) string { return "key-" + strconv.Itoa(n%keys) }
}

// orderedScenario: the steady-batch load (--events, --batch a request,
// from --publishers, spread over --endpoints subscriptions), every event
// with a partitionkey of --ordered-keys keys, run twice, each on a fresh
// server: first with the subscriptions ordering by key (each key's
// deliveries one at a time, in publish order: docs/ordering.md), then
// unordered. The figures compare the deliveries/s (the claims' head
// checks, keyed deliveries kept off the publish fast path) and the p99
// latency of the two runs. It checks no budget line: the lead sets one
// from its figures.
func orderedScenario(ctx context.Context, e *env, res *Result) error {
	orderings := []string{"key", ""}
	phases, err := freshRuns(ctx, e, []string{"ordered", "unordered"}, func(i int, name string) (*PhaseResult, error) {
		return e.orderedPhase(ctx, res, name, orderings[i])
	})
	if err != nil {
		return err
	}
	ordered, unordered := phases[0], phases[1]
	if unordered.DeliveriesPerSec > 0 {
		res.figure("deliveries/s, ordered vs. unordered", ordered.DeliveriesPerSec/unordered.DeliveriesPerSec*100, "%")
	}
	res.figure("keys", float64(e.cfg.Sizes.OrderedKeys), "")
	return nil
}

// orderedPhase subscribes --endpoints receivers with ordering (or none),
// publishes the steady-batch load with partition keys and waits until
// every event is received and nothing is pending.
func (e *env) orderedPhase(ctx context.Context, res *Result, name, ordering string) (*PhaseResult, error) {
	s := e.cfg.Sizes
	rs := make([]*Receiver, s.Endpoints)
	for k := range rs {
		r, err := e.pushTo(ctx, subscription{Name: fmt.Sprintf("ep-%02d", k), EventTypes: []string{typeName(k)}, Ordering: ordering}, false)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rs[k] = r
	}
	l := &load{prefix: prefix(e.name, name), events: s.Events, batch: s.Batch, publishers: s.Publishers, data: eventData(s.PayloadBytes),
		keyOf: orderedKey(s.OrderedKeys)}
	ph, _, err := e.spreadPhase(ctx, res, name, l, rs)
	return ph, err
}
