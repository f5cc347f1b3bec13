package bench

import (
	"context"
	"fmt"
)

// budgetTransformed is transformed's line: its deliveries/s at least this
// share of the same load untransformed (issue 39, docs/subscriptions.md).
const budgetTransformed = 0.80

// transformedBytes is the size of the transformed scenario's events.
const transformedBytes = 1 << 10

// reshapeInvoice is the transformed scenario's transform: an invoice
// (schemaData) reshaped into a chat message with its customer, a total per
// line and its metadata, as a receiver that wants another shape asks for.
const reshapeInvoice = `{"text": "Invoice " + data.id + " paid: " + string(data.amount) + " " + data.currency,` +
	` "customer": data.customer.email,` +
	` "lines": data.lines.map(l, {"sku": l.sku, "total": l.quantity * l.unit_amount}),` +
	` "metadata": data.metadata}`

// transformedScenario: the steady-batch load (--events, --batch a request,
// from --publishers, spread over --endpoints subscriptions) of 1 KB
// invoices (schemaData), run twice, each on a fresh server: first with
// every subscription reshaping each event with reshapeInvoice, then
// without. The line: the first's deliveries/s at least 0.8× the second's.
func transformedScenario(ctx context.Context, e *env, res *Result) error {
	phases, err := freshRuns(ctx, e, []string{"transformed", "untransformed"}, func(i int, name string) (*PhaseResult, error) {
		return transformedPhase(ctx, e, res, name, i == 0)
	})
	if err != nil {
		return err
	}
	res.ratioLine("deliveries/s, transformed vs. untransformed",
		"deliveries/s with every event reshaped by a CEL transform (issue 39)", phases[0], phases[1], budgetTransformed)
	return nil
}

// transformedPhase subscribes --endpoints receivers (with the transform
// when transformed), then publishes the load and waits until every event
// is received and nothing is pending.
func transformedPhase(ctx context.Context, e *env, res *Result, name string, transformed bool) (*PhaseResult, error) {
	s := e.cfg.Sizes
	rs := make([]*Receiver, s.Endpoints)
	for k := range rs {
		sub := subscription{Name: fmt.Sprintf("ep-%02d", k), EventTypes: []string{typeName(k)}}
		if transformed {
			sub.Transform = &transformSpec{CEL: reshapeInvoice}
		}
		r, err := e.pushTo(ctx, sub, false)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rs[k] = r
	}
	l := &load{prefix: prefix(e.name, name), events: s.Events, batch: s.Batch, publishers: s.Publishers, data: schemaData(transformedBytes)}
	ph, _, err := e.spreadPhase(ctx, res, name, l, rs)
	return ph, err
}

// ratioLine adds the figure of a's deliveries/s over b's (as a percentage)
// and the check that it is at least budget.
func (r *Result) ratioLine(figure, check string, a, b PhaseResult, budget float64) {
	ratio := 0.0
	if b.DeliveriesPerSec > 0 {
		ratio = a.DeliveriesPerSec / b.DeliveriesPerSec
	}
	r.figure(figure, ratio*100, "%")
	r.check(check, fmt.Sprintf("≥ %.0f %% of %s", budget*100, b.Name),
		fmt.Sprintf("%.0f %% (%s/s vs. %s/s)", ratio*100, thousands(a.DeliveriesPerSec), thousands(b.DeliveriesPerSec)), ratio >= budget)
}
