package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Sizes of the rate-limited scenario.
const (
	// limitedRate and limitedBurst are the limited endpoint's rate limit.
	limitedRate  = 200.0
	limitedBurst = 200
	// limitedMax bounds the events sent to the limited endpoint: 2,000 at
	// 200/s take about 9 s after the burst.
	limitedMax = 2000
	// budgetUnlimited: the unlimited endpoints' deliveries/s beside the
	// limited one vs. without it.
	budgetUnlimited = 0.90
	// budgetRateError: the limited endpoint's achieved rate after its
	// burst within this share of its limit.
	budgetRateError = 0.10
)

// limitedType is the event type only the limited endpoint takes.
const limitedType = "bench.limited"

// rateLimitedScenario: steady-batch's load over --endpoints unlimited
// endpoints, run twice on fresh servers: first with one more endpoint
// limited to limitedRate a second (burst limitedBurst) taking one event in
// every Events/limitedMax (at least every other: its own type), then the
// same events without it (that type then goes nowhere). The figures
// are the unlimited endpoints' deliveries/s in both runs and the limited
// endpoint's achieved rate after its burst.
func rateLimitedScenario(ctx context.Context, e *env, res *Result) error {
	with, err := e.rateLimitedPhase(ctx, res, true)
	if err != nil {
		return err
	}
	if err := e.restart(ctx); err != nil {
		return fmt.Errorf("unlimited-only: a fresh server: %w", err)
	}
	without, err := e.rateLimitedPhase(ctx, res, false)
	if err != nil {
		return err
	}
	ratio := 0.0
	if without > 0 {
		ratio = with / without
	}
	res.figure("unlimited endpoints' deliveries/s, beside a limited one vs. without", ratio*100, "%")
	res.check("unlimited endpoints' throughput beside a rate-limited endpoint (not a budget line)", "≥ 90 % of without",
		fmt.Sprintf("%.0f %% (%s/s vs. %s/s)", ratio*100, thousands(with), thousands(without)), ratio >= budgetUnlimited)
	return nil
}

// rateLimitedPhase runs one run of the scenario (limited: with the limited
// endpoint) and returns the unlimited endpoints' deliveries/s.
func (e *env) rateLimitedPhase(ctx context.Context, res *Result, limited bool) (float64, error) {
	s := e.cfg.Sizes
	name := "unlimited-only"
	if limited {
		name = "with-limited"
	}
	rs, err := e.endpoints(ctx, name, s.Endpoints, "", "", nil)
	if err != nil {
		return 0, err
	}
	l := &load{prefix: prefix(e.name, name), events: s.Events, batch: s.Batch, publishers: s.Publishers, data: eventData(s.PayloadBytes)}
	p, lat := spread(name, l, rs)
	p.settle = true
	// Both runs publish the same events: one in every stride of the
	// limited endpoint's type, which no one takes in the second.
	stride := max(2, s.Events/limitedMax) // at least every other event unlimited
	l.typeOf = func(n int) string {
		if n%stride == 0 {
			return limitedType
		}
		return typeName(n % len(rs))
	}
	for k, r := range rs {
		p.expect[r] = count(l.events, func(n int) bool { return n%stride != 0 && n%len(rs) == k })
	}
	var lim *Receiver
	if limited {
		if lim, err = limitedEndpoint(ctx, e); err != nil {
			return 0, err
		}
		p.expect[lim] = count(l.events, func(n int) bool { return n%stride == 0 })
		p.lat[lim] = &recorder{}
	}
	pr, err := e.run(ctx, p)
	if pr == nil || pr.load.Accepted == 0 {
		return 0, err
	}
	ph := pr.result(name, rs, count(l.events, func(n int) bool { return n%stride != 0 }), lat)
	res.Phases = append(res.Phases, ph)
	if limited {
		st := pr.stats([]*Receiver{lim})
		rate := 0.0
		if secs := st.last.Sub(st.first).Seconds(); secs > 0 && st.unique > limitedBurst {
			rate = float64(st.unique-limitedBurst) / secs
		}
		res.figure("limited endpoint's rate limit", limitedRate, "requests/s")
		res.figure("limited endpoint's achieved rate after its burst", rate, "requests/s")
		res.figure("limited endpoint's deliveries", float64(st.unique), "")
		if st.unique > 2*limitedBurst {
			off := rate/limitedRate - 1
			res.check("a rate-limited endpoint's achieved rate after its burst", "within ± 10 % of its limit",
				fmt.Sprintf("%.1f/s for %.0f/s", rate, limitedRate), off <= budgetRateError && off >= -budgetRateError)
		}
	}
	return ph.DeliveriesPerSec, err
}

// limitedEndpoint starts e's limited endpoint's receiver, subscribes it to
// limitedType and sets its endpoint's rate limit.
func limitedEndpoint(ctx context.Context, e *env) (*Receiver, error) {
	r, err := startReceiver("/hook/limited", false)
	if err != nil {
		return nil, err
	}
	e.recv = append(e.recv, r)
	id, err := e.api.createSubscription(ctx, subscription{Name: "limited", URL: r.URL, EventTypes: []string{limitedType}})
	if err != nil {
		return nil, err
	}
	return r, e.api.setRateLimit(ctx, id, limitedRate, limitedBurst)
}

// setRateLimit sets the rate limit of subscription subID's endpoint.
func (c *client) setRateLimit(ctx context.Context, subID string, perSecond float64, burst int) error {
	code, resp, err := c.do(ctx, http.MethodGet, "/v1/subscriptions/"+subID, "", nil)
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("reading subscription %s: %d %s %v", subID, code, resp, err)
	}
	var sub struct {
		EndpointID string `json:"endpoint_id"`
	}
	if err := json.Unmarshal(resp, &sub); err != nil {
		return fmt.Errorf("reading subscription %s: %w", subID, err)
	}
	body, _ := json.Marshal(map[string]any{"rate_limit": map[string]any{"per_second": perSecond, "burst": burst}})
	code, resp, err = c.do(ctx, http.MethodPatch, "/v1/endpoints/"+sub.EndpointID, "application/json", body)
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("setting the rate limit of %s: %d %s %v", sub.EndpointID, code, resp, err)
	}
	return nil
}
