package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"
)

// The retry policies the scenarios subscribe with.
const (
	// quickRetry retries every second for an hour: failing endpoints are
	// tried again soon after they recover.
	quickRetry = `{"preset":"custom","delays":["1s"],"ttl":"1h"}`
)

// Lines of the performance budget in docs/benchmarks.md.
const (
	budgetBatch     = 10_000.0 // deliveries/s, 100 events a request
	budgetPostgres  = 5_000.0  // deliveries/s, 100 events a request, PostgreSQL
	budgetSingle    = 4_000.0  // deliveries/s, one event a request
	budgetP99       = 50 * time.Millisecond
	budgetHealthy   = 0.80 // blackhole: healthy throughput vs. normal
	budgetRSSMiB    = 512.0
	budgetFreshSlow = 2.0 // backlog: fresh p99 vs. before the backlog
)

func typeName(k int) string { return "bench.t" + strconv.Itoa(k) }

// endpoints starts n receivers, receiver k subscribed to typeName(k).
func (e *env) endpoints(ctx context.Context, tag string, n int, policy, timeout string, hole func(k int) bool) ([]*Receiver, error) {
	rs := make([]*Receiver, n)
	for k := range n {
		h := hole != nil && hole(k)
		r, err := e.receiver(ctx, fmt.Sprintf("%s-%02d", tag, k), []string{typeName(k)}, policy, timeout, h)
		if err != nil {
			return nil, err
		}
		rs[k] = r
	}
	return rs, nil
}

// spread is a phase whose event n goes to receiver n mod len(rs) (through
// its type), all latencies in one recorder.
func spread(name string, l *load, rs []*Receiver) (*phase, *recorder) {
	lat := &recorder{}
	l.typeOf = func(n int) string { return typeName(n % len(rs)) }
	p := &phase{name: name, load: l, expect: map[*Receiver]int{}, lat: map[*Receiver]*recorder{}}
	for k, r := range rs {
		p.expect[r] = count(l.events, func(n int) bool { return n%len(rs) == k })
		p.lat[r] = lat
	}
	return p, lat
}

// steady runs one spread phase as fast as the publishers go and checks the
// deliveries/s budget.
func steady(ctx context.Context, e *env, res *Result, events, batch, pubs int, line string, budget float64) error {
	s := e.cfg.Sizes
	rs, err := e.endpoints(ctx, "ep", s.Endpoints, "", "", nil)
	if err != nil {
		return err
	}
	l := &load{prefix: prefix(e.name, "main"), events: events, batch: batch, publishers: pubs, data: eventData(s.PayloadBytes)}
	p, lat := spread("", l, rs)
	p.settle = true
	pr, err := e.run(ctx, p)
	if pr != nil && pr.load.Accepted > 0 {
		res.Phases = append(res.Phases, pr.result("", rs, events, lat))
	}
	if err != nil {
		return err
	}
	ph := res.Phases[0]
	res.check(line, fmt.Sprintf("≥ %s/s", thousands(budget)), fmt.Sprintf("%s/s", thousands(ph.DeliveriesPerSec)), ph.DeliveriesPerSec >= budget)
	return nil
}

func steadyBatch(ctx context.Context, e *env, res *Result) error {
	s := e.cfg.Sizes
	if isPostgres(e.cfg.Store) {
		return steady(ctx, e, res, s.Events, s.Batch, s.Publishers,
			"durable deliveries/s on the PostgreSQL store", budgetPostgres)
	}
	return steady(ctx, e, res, s.Events, s.Batch, s.Publishers,
		"durable deliveries/s, embedded store, publishing 100 events a request", budgetBatch)
}

func steadySingle(ctx context.Context, e *env, res *Result) error {
	s := e.cfg.Sizes
	return steady(ctx, e, res, s.SingleEvents, 1, s.SinglePubs,
		"the same, one event a request", budgetSingle)
}

// offered returns a load of one event a request at the configured rate for d.
func offered(e *env, name string, d time.Duration) *load {
	s := e.cfg.Sizes
	return &load{
		prefix: prefix(e.name, name), events: max(1, int(math.Round(s.Rate*d.Seconds()))),
		batch: 1, publishers: s.RateWorkers, rate: s.Rate, data: eventData(s.PayloadBytes),
	}
}

func latencyScenario(ctx context.Context, e *env, res *Result) error {
	s := e.cfg.Sizes
	rs, err := e.endpoints(ctx, "ep", s.Endpoints, "", "", nil)
	if err != nil {
		return err
	}
	if err := e.warmup(ctx, rs); err != nil {
		return err
	}
	l := offered(e, "main", s.Duration)
	p, lat := spread("", l, rs)
	p.settle = true
	pr, err := e.run(ctx, p)
	if pr != nil && pr.load.Accepted > 0 {
		res.Phases = append(res.Phases, pr.result("", rs, l.events, lat))
		res.figure("offered rate", s.Rate, "events/s")
		res.figure("publisher lag at the end", pr.load.Late.Seconds()*1000, "ms")
	}
	if err != nil {
		return err
	}
	p99 := res.Phases[0].Latency.P99
	res.check(fmt.Sprintf("publish → endpoint latency p99 at %s events/s offered", thousands(s.Rate)),
		"≤ 50 ms", fmtMs(p99), p99 <= budgetP99)
	return nil
}

func fanoutScenario(ctx context.Context, e *env, res *Result) error {
	s := e.cfg.Sizes
	rs := make([]*Receiver, s.Fanout)
	for k := range rs {
		r, err := e.receiver(ctx, fmt.Sprintf("fan-%02d", k), []string{"bench.fan"}, "", "", false)
		if err != nil {
			return err
		}
		rs[k] = r
	}
	l := &load{prefix: prefix(e.name, "main"), events: s.FanoutEvents, batch: s.Batch, publishers: s.Publishers,
		data: eventData(s.PayloadBytes), typeOf: func(int) string { return "bench.fan" }}
	lat := &recorder{}
	p := &phase{load: l, expect: map[*Receiver]int{}, lat: map[*Receiver]*recorder{}, settle: true}
	for _, r := range rs {
		p.expect[r] = l.events
		p.lat[r] = lat
	}
	pr, err := e.run(ctx, p)
	if pr != nil && pr.load.Accepted > 0 {
		res.Phases = append(res.Phases, pr.result("", rs, l.events*len(rs), lat))
		res.figure("subscriptions per event", float64(s.Fanout), "")
	}
	return err
}

func failingScenario(ctx context.Context, e *env, res *Result) error {
	s := e.cfg.Sizes
	nFail := max(1, int(math.Round(float64(s.Endpoints)*s.FailShare)))
	rs, err := e.endpoints(ctx, "ep", s.Endpoints, quickRetry, "", nil)
	if err != nil {
		return err
	}
	failing, healthy := rs[:nFail], rs[nFail:]
	if err := e.warmup(ctx, rs); err != nil {
		return err
	}
	l := offered(e, "main", s.FailDuration)
	p, _ := spread("", l, rs)
	healthyLat, failingLat := &recorder{}, &recorder{}
	for _, r := range healthy {
		p.lat[r] = healthyLat
	}
	for _, r := range failing {
		p.lat[r] = failingLat
		r.mode.Store(modeFail)
	}
	p.settle = true
	var recovered atomic.Int64
	p.split = &recovered
	p.latAfter = map[*Receiver]*recorder{}
	healthyAfter, failingAfter := &recorder{}, &recorder{}
	for _, r := range healthy {
		p.latAfter[r] = healthyAfter
	}
	for _, r := range failing {
		p.latAfter[r] = failingAfter
	}
	p.during = func(ctx context.Context, start time.Time) {
		t := time.NewTimer(time.Until(start.Add(s.FailFor)))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		recovered.Store(time.Now().UnixNano())
		for _, r := range failing {
			r.mode.Store(modeOK)
		}
	}
	pr, err := e.run(ctx, p)
	if pr != nil && pr.load.Accepted > 0 {
		hCount := 0
		for _, r := range healthy {
			hCount += p.expect[r]
		}
		all := pr.result("all", rs, l.events, healthyLat, failingLat, healthyAfter, failingAfter)
		hd := pr.result("healthy-during", healthy, 0, healthyLat)
		ha := pr.result("healthy-after", healthy, 0, healthyAfter)
		f := pr.result("failing", failing, l.events-hCount, failingLat, failingAfter)
		for _, ph := range []*PhaseResult{&hd, &ha} {
			ph.Events, ph.EventsPerSec, ph.Deliveries, ph.Expected, ph.DeliveriesPerSec = 0, 0, ph.Latency.Count, ph.Latency.Count, 0
			ph.CPUSeconds, ph.CPUPer1000 = 0, 0
		}
		f.Events, f.EventsPerSec = 0, 0
		res.Phases = append(res.Phases, all, hd, ha, f)
		var refused int64
		for _, r := range failing {
			refused += r.failed.Load()
		}
		res.figure("failing endpoints", float64(nFail), "")
		res.figure("attempts answered 503", float64(refused), "")
		if rt := recovered.Load(); rt != 0 {
			var last int64
			for _, r := range failing {
				if t := pr.tracks[r]; t != nil {
					last = max(last, t.lastBefore.Load())
				}
			}
			if last > rt {
				res.figure("failing endpoints had every event published while they failed, after recovery, in", time.Duration(last-rt).Seconds(), "s")
			}
		}
	}
	if err != nil {
		return err
	}
	p99 := res.Phases[1].Latency.P99
	res.check(fmt.Sprintf("healthy endpoints' p99 while %.0f %% fail", s.FailShare*100)+" (failing endpoints must not slow fresh deliveries; not a budget line)", "≤ 50 ms", fmtMs(p99), p99 <= budgetP99)
	return nil
}

func blackholeScenario(ctx context.Context, e *env, res *Result) error {
	s := e.cfg.Sizes
	nHole := max(1, int(math.Round(float64(s.BHEndpoints)*s.BHShare)))
	timeout := s.BHTimeout.String()
	rs, err := e.endpoints(ctx, "ep", s.BHEndpoints, quickRetry, timeout, func(k int) bool { return k < nHole })
	if err != nil {
		return err
	}
	holes, healthy := rs[:nHole], rs[nHole:]
	data := eventData(s.PayloadBytes)

	// Normal: the same healthy endpoints, nothing sent to the black holes.
	ln := &load{prefix: prefix(e.name, "normal"), events: s.BHEvents, batch: s.Batch, publishers: s.Publishers, data: data}
	pn, latN := spread("normal", ln, healthy)
	pn.load.typeOf = func(n int) string { return typeName(nHole + n%len(healthy)) }
	pn.settle = true
	prN, err := e.run(ctx, pn)
	if prN != nil && prN.load.Accepted > 0 {
		res.Phases = append(res.Phases, prN.result("normal", healthy, ln.events, latN))
	}
	if err != nil {
		return err
	}

	// Black holes: events spread over every endpoint; only the healthy
	// ones' receipts are waited for and counted.
	lb := &load{prefix: prefix(e.name, "holes"), events: s.BHEvents, batch: s.Batch, publishers: s.Publishers, data: data}
	pb, latB := spread("blackhole", lb, rs)
	for _, r := range holes {
		delete(pb.expect, r)
	}
	hCount := 0
	for _, r := range healthy {
		hCount += pb.expect[r]
	}
	prB, err := e.run(ctx, pb)
	if prB != nil && prB.load.Accepted > 0 {
		res.Phases = append(res.Phases, prB.result("blackhole", healthy, hCount, latB))
		var held int64
		for _, r := range holes {
			held += r.requests.Load()
		}
		res.figure("black-hole endpoints", float64(nHole), "")
		res.figure("connections the black holes hold or held", float64(held), "")
	}
	if err != nil {
		return err
	}
	normal, holed := res.Phases[0].DeliveriesPerSec, res.Phases[1].DeliveriesPerSec
	ratio := 0.0
	if normal > 0 {
		ratio = holed / normal
	}
	res.figure("healthy throughput vs. normal", ratio*100, "%")
	res.check(fmt.Sprintf("healthy endpoints' throughput while %.0f %% of endpoints never answer", s.BHShare*100),
		"≥ 80 % of normal", fmt.Sprintf("%.0f %% (%s/s vs. %s/s)", ratio*100, thousands(holed), thousands(normal)), ratio >= budgetHealthy)
	return nil
}

func backlogScenario(ctx context.Context, e *env, res *Result) error {
	s := e.cfg.Sizes
	rs, err := e.endpoints(ctx, "ep", s.Endpoints, "", "", nil)
	if err != nil {
		return err
	}
	policy := fmt.Sprintf(`{"preset":"custom","delays":[%q],"ttl":%q}`, s.BacklogRetry.String(), (4 * s.BacklogRetry).String())
	backlog := make([]*Receiver, s.BacklogEPs)
	for k := range backlog {
		r, err := e.receiver(ctx, fmt.Sprintf("backlog-%02d", k), []string{"bench.backlog"}, policy, "", false)
		if err != nil {
			return err
		}
		r.mode.Store(modeFailFirst)
		backlog[k] = r
	}

	fresh := func(name string) (PhaseResult, error) {
		l := offered(e, name, s.BacklogFresh)
		p, lat := spread(name, l, rs)
		pr, err := e.run(ctx, p)
		var ph PhaseResult
		if pr != nil && pr.load.Accepted > 0 {
			ph = pr.result(name, rs, l.events, lat)
			res.Phases = append(res.Phases, ph)
		}
		return ph, err
	}

	if err := e.warmup(ctx, rs); err != nil {
		return err
	}
	before, err := fresh("before")
	if err != nil {
		return err
	}

	events := (s.Backlog + s.BacklogEPs - 1) / s.BacklogEPs
	lb := &load{prefix: prefix(e.name, "build"), events: events, batch: s.Batch, publishers: s.Publishers,
		data: eventData(s.PayloadBytes), typeOf: func(int) string { return "bench.backlog" }}
	blat := &recorder{}
	pb := &phase{name: "build", load: lb, expect: map[*Receiver]int{}, lat: map[*Receiver]*recorder{}, allowStall: true}
	for _, r := range backlog {
		pb.expect[r] = events
		pb.lat[r] = blat
	}
	prB, err := e.run(ctx, pb)
	if prB != nil && prB.load.Accepted > 0 {
		ph := prB.result("build", backlog, events*len(backlog), blat)
		res.Phases = append(res.Phases, ph)
		res.figure("deliveries in the backlog", float64(prB.load.Deliveries), "")
		res.figure("first attempts (answered 500) before the fresh phase", float64(ph.Deliveries), "")
		if prB.stalled {
			res.figure("first attempts stalled (the server held the rest back)", 1, "")
		}
	}
	if err != nil {
		return err
	}
	settled, err := e.settleBacklog(ctx, prB.load.Deliveries)
	if err != nil {
		return err
	}
	res.figure("wait for the backlog's outcomes to be committed", settled.Seconds(), "s")
	rssBacklog := mib(e.srv.sampler.sample().RSS)

	after, err := fresh("after")
	if err != nil {
		return err
	}
	var retried int64
	for _, r := range backlog {
		retried += r.retried.Load()
	}
	res.figure("server RSS with the backlog pending", rssBacklog, "MiB")
	res.figure("backlog retries seen (should be 0)", float64(retried), "")
	peak := procMem(e.srv.pid).Peak
	res.check(fmt.Sprintf("server memory with %s deliveries pending retry", thousands(float64(prB.load.Deliveries))),
		"≤ 512 MiB", fmt.Sprintf("%.0f MiB peak", mib(peak)), mib(peak) <= budgetRSSMiB)
	ratio := 0.0
	if before.Latency.P99 > 0 {
		ratio = float64(after.Latency.P99) / float64(before.Latency.P99)
	}
	res.check("fresh latency with the backlog pending", "p99 ≤ 2× before",
		fmt.Sprintf("%.2f× (p99 %s vs. %s)", ratio, fmtMs(after.Latency.P99), fmtMs(before.Latency.P99)), ratio <= budgetFreshSlow)
	return nil
}

// warmupFor is how long the offered rate runs, unmeasured, before the
// measured phases of the rate scenarios: connections to the receivers, the
// heap and the database file grow to their working size first.
const warmupFor = 2 * time.Second

// warmup offers the configured rate to rs for warmupFor and waits for the
// receipts.
func (e *env) warmup(ctx context.Context, rs []*Receiver) error {
	l := offered(e, "warmup", warmupFor)
	p, _ := spread("warm-up", l, rs)
	_, err := e.run(ctx, p)
	return err
}

// settleStall is how long settleBacklog waits without the fresh-lane count
// going down before it reports the backlog stuck.
const settleStall = 60 * time.Second

// settleBacklog waits until the server's pending-deliveries gauge shows no
// delivery waiting for a first attempt and at least want waiting for a
// retry, so that the next phase meets the backlog at rest, not the tail of
// its outcomes being committed. Without the gauge it waits a few seconds.
// When the fresh lane stops going down for settleStall it fails: deliveries
// are pending that the server does not attempt.
func (e *env) settleBacklog(ctx context.Context, want int64) (time.Duration, error) {
	start := time.Now()
	var fresh, retry int64
	e.prog.set(func() string {
		return fmt.Sprintf("%s: waiting for the backlog to be recorded  %.0fs", e.name, time.Since(start).Seconds())
	})
	defer e.prog.set(nil)
	lowest, lowestAt := int64(-1), time.Now()
	for {
		var ok bool
		var err error
		fresh, retry, ok, err = e.api.pendingByLane(ctx)
		if err != nil {
			return time.Since(start), fmt.Errorf("reading /metrics: %w", err)
		}
		if !ok {
			select {
			case <-time.After(5 * time.Second):
				return time.Since(start), nil
			case <-ctx.Done():
				return time.Since(start), ctx.Err()
			}
		}
		if fresh == 0 && retry >= want {
			return time.Since(start), nil
		}
		if lowest < 0 || fresh < lowest {
			lowest, lowestAt = fresh, time.Now()
		}
		if time.Since(lowestAt) > settleStall {
			return time.Since(start), fmt.Errorf("backlog stuck: %d deliveries pending a first attempt (and %d a retry) for %s without progress; the server holds them leased or does not load them", fresh, retry, settleStall)
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("backlog not recorded (pending: %d fresh, %d retry, want %d retry): %w", fresh, retry, want, ctx.Err())
		}
		if !e.srv.alive() {
			return time.Since(start), errExited
		}
	}
}
