package scheduling

import (
	"log/slog"
	"time"

	"github.com/herald-events/herald/internal/attempting"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/recording"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
)

// runner runs the attempts pump started, each on a worker: it hands the
// attempt to the attempting stage and, when the exchange is over, gives
// back its concurrency slot, applies what it said of the endpoint's health
// and hands the outcomes to the recording stage; their memory places are
// freed by the finisher (finish.go) once they are written.
type runner struct {
	sched     *scheduler
	attempter Attempter
	recorder  Recorder
	workers   *workers
	rel       *releaser
	probes    *probes
	clock     clock.Clock
	log       *slog.Logger
	// The loops woken by what an exchange changes.
	loader, health *startstop.Loop
}

// launch runs the attempts the scheduler started (pump counted each in
// scheduler.attempts).
func (r *runner) launch(starts []start) {
	for _, st := range starts {
		r.workers.run(func() { r.run(st) })
	}
}

// run performs st and then, on the same worker, the first attempt that
// each exchange's end started (the others go to other workers): a worker
// whose attempt ended goes on with the next one rather than handing it to
// another goroutine.
func (r *runner) run(st start) {
	for {
		next, ok := r.runOne(st)
		if !ok {
			return
		}
		st = next
	}
}

// runOne performs one start: one request, of one delivery or of a batch of
// one subscription's deliveries. The endpoint's concurrency slot is given
// back as soon as the HTTP exchange ends, before the outcomes' group
// commit; each delivery's memory place only once its outcome is written
// (the finisher). It returns the first attempt the exchange's end started,
// for the caller to run (ok false: none), and launches the others.
func (r *runner) runOne(st start) (next start, ok bool) {
	defer r.sched.attempts.Done()
	job := attempting.Job{Deliveries: make([]*store.Claimed, 0, 1+len(st.batch)), Probe: st.it.probe}
	job.Deliveries = append(job.Deliveries, &st.it.c)
	for _, it := range st.batch {
		job.Deliveries = append(job.Deliveries, &it.c)
	}
	ex := r.attempter.Attempt(job)
	if len(ex.GiveBack) == 0 {
		// A probe that sent nothing gives back its hold before anything
		// wakes the loader (the exchange's end, the outcomes' commit), so
		// the loader takes the next probe at once instead of finding it
		// held and waiting a FlushInterval.
		if ex.ReturnProbe {
			r.probes.giveBack(st.l)
		}
		next, ok = r.takeFirst(r.exchangeEnded(st.l, &ex))
		r.record(ex.Record)
		return next, ok
	}
	next, ok = r.takeFirst(r.exchangeEnded(st.l, &ex))
	items := st.items()
	ids := make([]string, len(ex.GiveBack))
	for i, k := range ex.GiveBack {
		ids[i] = items[k].c.ID
	}
	r.rel.release(ids)
	if ex.ReturnProbe {
		r.probes.giveBack(st.l)
	}
	now := r.clock.Now()
	for _, k := range ex.GiveBack {
		r.sched.finished(st.l, items[k], time.Time{}, now)
	}
	r.record(ex.Record)
	return next, ok
}

// takeFirst launches every start but the first, which it returns (ok
// false: there is none).
func (r *runner) takeFirst(starts []start) (start, bool) {
	if len(starts) == 0 {
		return start{}, false
	}
	r.launch(starts[1:])
	return starts[0], true
}

// record hands outcomes to the recorder, waiting for room.
func (r *runner) record(reqs []recording.Request) {
	for _, req := range reqs {
		r.recorder.Add(req)
	}
}

// exchangeEnded tells the scheduler an attempt's HTTP exchange is over
// (ex.Health: what it said of the endpoint's health, when Observed) and
// does what it asks: merge health, release deliveries, wake the loader. It
// returns the attempts the scheduler started, for the caller to run.
func (r *runner) exchangeEnded(l *lane, ex *attempting.Exchange) []start {
	var obs *health.Outcome
	if ex.Observed {
		obs = &ex.Health
	}
	en := r.sched.attemptEnded(l, obs, ex.Duration, ex.URL, r.clock.Now())
	if en.tr.Changed() {
		// Logged at info or warn once merged into the store, on the node
		// whose merge found it (healthSync.report).
		r.log.Debug("endpoint circuit changed here; merging", "endpoint_id", l.id, "from", en.tr.From, "to", en.tr.To, "reason", en.tr.Reason)
	}
	if en.flush {
		r.health.Kick() // share the change with the other nodes now
	}
	r.rel.release(en.released)
	if en.wake {
		r.loader.Kick()
	}
	return en.starts
}

// ended is what the end of an attempt's HTTP exchange asks of the runner.
type ended struct {
	starts   []start           // attempts to start now
	released []string          // deliveries to give back to the store
	tr       health.Transition // the local circuit transition, if any
	flush    bool              // merge the lane's outcomes into the store now
	wake     bool              // wake the loader
}

// attemptEnded gives back the lane's and the global concurrency slot of an
// attempt whose HTTP exchange ended, and applies what it said about the
// endpoint's health to this node's view (obs nil: nothing, e.g. no attempt
// was made, or a failure that says nothing about the endpoint).
// url, when not empty, is the endpoint's URL, for its view; rtt is how
// long the exchange took (0: unknown), for the lane's limit (adapt).
func (s *scheduler) attemptEnded(l *lane, obs *health.Outcome, rtt time.Duration, url string, now time.Time) ended {
	s.mu.Lock()
	defer s.mu.Unlock()
	var res ended
	if l.ep.URL == "" {
		l.ep.URL = url
	}
	atLimit := l.inFlight >= l.limit
	l.inFlight--
	s.inFlight--
	if obs != nil {
		res.tr = s.cfg.Health.Observe(&l.ep.Health, *obs)
		l.pending = append(l.pending, *obs)
		if n := len(l.pending); n > 2*maxQueuedOutcomes {
			l.pending = append(l.pending[:0], l.pending[n-maxQueuedOutcomes:]...)
		}
		l.adapt(s.cfg, obs.Success, rtt, atLimit)
		if res.tr.Changed() {
			res.released = s.onTransition(l, res.tr, obs.At)
			res.wake = true
		}
		// A probe's outcome replaces the probe hold in the store: merge it
		// at once so the next probe is taken on time, here or elsewhere.
		res.flush = res.tr.Changed() || obs.Probe || len(l.pending) >= maxQueuedOutcomes
	}
	s.markReady(l)
	res.starts = s.pump(now, nil)
	return res
}
