package bench

import (
	"context"
	"fmt"
)

// batchRun is one run of the batch scenario: its subscriptions'
// max_events_per_batch and preferred_batch_size_kb (0: the server's
// default).
type batchRun struct {
	name      string
	maxEvents int
	kb        int
}

// batchKB is the preferred_batch_size_kb of the batched run: room for
// maxEvents events of payload bytes of data each (a stored event of the
// bench is its data and about 250 bytes of attributes), so that the batches
// are bounded by max_events_per_batch rather than by the 64 KiB default.
func batchKB(maxEvents, payload int) int {
	return min(1024, max(1, (maxEvents*(payload+512)+1023)/1024))
}

// batchScenario: the steady-batch load (--events, --batch a request, from
// --publishers, spread over --endpoints endpoints) run twice, each time on
// a fresh server: first with every subscription at max_events_per_batch 1
// (one event a request, application/cloudevents+json), then at --batch
// (default 100: JSON arrays of what the endpoint's lane holds, up to that
// many, application/cloudevents-batch+json). Deliveries are the distinct
// events received (a batch counts each of its events, each with its own
// latency); the figures add the requests received, the mean events a
// request, and the batched run against the unbatched one.
func batchScenario(ctx context.Context, e *env, res *Result) error {
	s := e.cfg.Sizes
	runs := []batchRun{
		{name: "max-1", maxEvents: 1},
		{name: fmt.Sprintf("max-%d", s.Batch), maxEvents: s.Batch, kb: batchKB(s.Batch, s.PayloadBytes)},
	}
	var phases []PhaseResult
	for i, run := range runs {
		if i > 0 {
			if err := e.restart(ctx); err != nil {
				return fmt.Errorf("%s: a fresh server: %w", run.name, err)
			}
		}
		ph, err := e.batchPhase(ctx, res, run)
		if ph != nil {
			phases = append(phases, *ph)
		}
		if err != nil {
			return err
		}
	}
	one, many := phases[0], phases[1]
	if one.DeliveriesPerSec > 0 {
		res.figure(fmt.Sprintf("deliveries/s, %s vs. %s", runs[1].name, runs[0].name), many.DeliveriesPerSec/one.DeliveriesPerSec, "×")
	}
	if one.CPUPer1000 > 0 {
		res.figure(fmt.Sprintf("server CPU s/1k, %s vs. %s", runs[1].name, runs[0].name), many.CPUPer1000/one.CPUPer1000, "×")
	}
	return nil
}

// batchPhase subscribes --endpoints receivers with run's batch options,
// publishes the steady-batch load to them and waits until every event is
// received and nothing is pending. It adds the phase and its figures to
// res and returns the phase (nil when nothing was published).
func (e *env) batchPhase(ctx context.Context, res *Result, run batchRun) (*PhaseResult, error) {
	s := e.cfg.Sizes
	rs := make([]*Receiver, s.Endpoints)
	for k := range rs {
		r, err := e.pushTo(ctx, subscription{Name: fmt.Sprintf("ep-%02d", k), EventTypes: []string{typeName(k)},
			MaxEventsPerBatch: run.maxEvents, PreferredBatchKB: run.kb}, false)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", run.name, err)
		}
		rs[k] = r
	}
	l := &load{prefix: prefix(e.name, run.name), events: s.Events, batch: s.Batch, publishers: s.Publishers, data: eventData(s.PayloadBytes)}
	p, lat := spread(run.name, l, rs)
	p.settle = true
	pr, err := e.run(ctx, p)
	if pr == nil || pr.load.Accepted == 0 {
		return nil, err
	}
	ph := pr.result(run.name, rs, l.events, lat)
	res.Phases = append(res.Phases, ph)
	var requests, events, batches int64
	for _, r := range rs {
		requests += r.requests.Load()
		events += r.events.Load()
		batches += r.batches.Load()
	}
	res.figure(run.name+": max_events_per_batch", float64(run.maxEvents), "")
	if run.kb > 0 {
		res.figure(run.name+": preferred_batch_size_kb", float64(run.kb), "")
	}
	res.figure(run.name+": requests received", float64(requests), "")
	res.figure(run.name+": requests as "+batchType, float64(batches), "")
	if requests > 0 {
		res.figure(run.name+": events a request (mean)", float64(events)/float64(requests), "")
	}
	return &ph, err
}
