package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"
)

// The soak scenario's measurement.
const (
	// soakWindow is the share of the deliveries (and, for the publish
	// rate, of the events) in each of the two windows compared: the first
	// and the last.
	soakWindow = 0.10
	// soakSampleEvery is how often the counts, the server's CPU time and
	// its RSS are sampled; window edges are interpolated between samples.
	soakSampleEvery = 100 * time.Millisecond
	// How often the store's size on disk is read, for its peak.
	soakStoreEvery   = 5 * time.Second
	soakStoreEveryPG = 15 * time.Second
	// soakLatencySamples is about how many latencies the phase keeps (a
	// systematic sample of them: recorder.every).
	soakLatencySamples = 1 << 20
	// budgetSoak: deliveries/s of the last window against the first.
	budgetSoak = 0.85
)

// soakPoint is one sample of the soak phase.
type soakPoint struct {
	t         time.Time
	delivered int64 // distinct receipts so far
	published int64 // events answered 202 so far
	cpu       time.Duration
	rss       int64
}

// soakScenario: steady-batch's load (--batch events a request from
// --publishers, spread over --endpoints endpoints, as fast as they go)
// until --soak-deliveries deliveries have arrived, on a server started with
// --dedup-retention --soak-retention, so that the store grows and the
// server's clean-up (once a minute: finished events older than the
// retention) runs behind the load: by default it finds nothing old enough,
// and the store holds every delivery at the end; with a retention shorter
// than the run it deletes at the end as fast as the load writes, on the
// same writer. It reports the whole run as one phase
// and, as two more, the first and the last 10 % of the deliveries (their
// deliveries/s, server CPU per delivery and RSS; events/s over the first
// and last 10 % of the events published), the ratio of the two rates, the
// store's size on disk at the end and at its peak, and the budget line:
// deliveries/s at the end within 15 % of the start.
//
// The bench's memory stays bounded at any size: receivers count event ids
// in a bitset per endpoint (track.seen: N bits, 1.25 MB per endpoint for
// 10 million events; no map of ids), and the latency recorder keeps about
// soakLatencySamples of the latencies, evenly spread over the run.
func soakScenario(ctx context.Context, e *env, res *Result) error {
	s := e.cfg.Sizes
	rs, err := e.endpoints(ctx, "ep", s.Endpoints, "", "", nil)
	if err != nil {
		return err
	}
	l := &load{prefix: prefix(e.name, "main"), events: s.SoakDeliveries, batch: s.Batch, publishers: s.Publishers, data: eventData(s.PayloadBytes)}
	p, lat := spread("", l, rs)
	lat.every = max(1, int64(s.SoakDeliveries/soakLatencySamples))
	p.settle = true

	// The samplers start before the phase (its start is known when it
	// ends) and stop after it.
	sm := startSoakSampler(ctx, e, rs, l)
	pr, err := e.run(ctx, p)
	sm.stop()

	res.figure("dedup retention (--soak-retention)", s.SoakRetention.Minutes(), "min")
	if lat.every > 1 {
		res.figure("latency: one delivery in this many sampled", float64(lat.every), "")
	}
	sm.storeFigures(res)
	if pr == nil || pr.load.Accepted == 0 {
		return err
	}
	res.Phases = append(res.Phases, pr.result("", rs, l.events, lat))
	soakCompare(res, pr, rs, sm.points, err == nil)
	return err
}

// soakSampler samples a soak phase while it runs: the counts, the server's
// CPU time and its RSS every soakSampleEvery (points), and the store's size
// on disk, for its peak.
type soakSampler struct {
	e      *env
	rs     []*Receiver
	l      *load
	cancel context.CancelFunc
	wg     sync.WaitGroup

	points    []soakPoint
	storePeak int64
	storeErr  error // the last error reading the store's size
}

// startSoakSampler starts sampling the phase of load l to rs until stop.
func startSoakSampler(ctx context.Context, e *env, rs []*Receiver, l *load) *soakSampler {
	sctx, cancel := context.WithCancel(ctx)
	sm := &soakSampler{e: e, rs: rs, l: l, cancel: cancel}
	storeEvery := soakStoreEvery
	if isPostgres(e.cfg.Store) {
		storeEvery = soakStoreEveryPG
	}
	sm.wg.Add(2)
	go sm.every(sctx, soakSampleEvery, func() { sm.points = append(sm.points, sm.sample()) })
	go sm.every(sctx, storeEvery, func() { sm.sampleStore(sctx) })
	return sm
}

// every calls f at once and then every d until ctx ends.
func (sm *soakSampler) every(ctx context.Context, d time.Duration, f func()) {
	defer sm.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// delivered is how many of the load's events the receivers have counted.
func (sm *soakSampler) delivered() int64 {
	var n int64
	for _, r := range sm.rs {
		if t := r.cur.Load(); t != nil && t.prefix == sm.l.prefix {
			n += t.unique.Load()
		}
	}
	return n
}

// sample is the phase's point now.
func (sm *soakSampler) sample() soakPoint {
	return soakPoint{t: time.Now(), delivered: sm.delivered(), published: sm.l.accepted.Load(),
		cpu: procCPU(sm.e.srv.pid), rss: sm.e.srv.sampler.current().RSS}
}

// sampleStore reads the store's size on disk into its peak.
func (sm *soakSampler) sampleStore(ctx context.Context) {
	n, ok, err := sm.e.storeBytes(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		sm.storeErr = err
	case ok:
		sm.storePeak = max(sm.storePeak, n)
	}
}

// stop ends the sampling, with a last point.
func (sm *soakSampler) stop() {
	sm.cancel()
	sm.wg.Wait()
	sm.points = append(sm.points, sm.sample())
}

// storeFigures reports the store's size on disk at the end and at its
// peak, or a note saying why it could not be measured.
func (sm *soakSampler) storeFigures(res *Result) {
	if end, ok, serr := sm.e.storeBytes(context.Background()); serr == nil && ok {
		sm.storePeak = max(sm.storePeak, end)
		res.figure("store on disk at the end", mib(end), "MiB")
		res.figure("store on disk, peak", mib(sm.storePeak), "MiB")
	} else {
		if serr == nil {
			serr = sm.storeErr
		}
		why := "not measured"
		if serr != nil {
			why += ": " + serr.Error()
		}
		res.Notes = append(res.Notes, "store size on disk: n/a ("+why+")")
	}
}

// soakCompare adds the first and the last window of the soak phase pr (see
// soakWindows) to res with the ratios of their rates and, when the phase
// finished, the budget line.
func soakCompare(res *Result, pr *phaseRun, rs []*Receiver, points []soakPoint, finished bool) {
	st := pr.stats(rs)
	first, last, ok := soakWindows(points, pr.load, st, pr.loadAvg[0])
	if !ok {
		return
	}
	res.Phases = append(res.Phases, first, last)
	ratio := last.DeliveriesPerSec / first.DeliveriesPerSec
	res.figure("deliveries/s, last 10 % vs. first 10 %", ratio, "×")
	if first.EventsPerSec > 0 {
		res.figure("publish events/s, last 10 % vs. first 10 %", last.EventsPerSec/first.EventsPerSec, "×")
	}
	if first.CPUPer1000 > 0 {
		res.figure("server CPU s/1k, last 10 % vs. first 10 %", last.CPUPer1000/first.CPUPer1000, "×")
	}
	if finished {
		res.check(fmt.Sprintf("soak: deliveries/s with %s finished deliveries within 15 %% of the start", thousands(float64(st.unique))),
			"last 10 % ≥ 85 % of the first 10 %",
			fmt.Sprintf("%.0f %% (%s/s vs. %s/s)", ratio*100, thousands(last.DeliveriesPerSec), thousands(first.DeliveriesPerSec)),
			ratio >= budgetSoak)
	}
}

// soakWindows computes the first and the last window of a soak phase from
// its samples: deliveries/s, server CPU per delivery and peak RSS over the
// first and the last soakWindow of the deliveries; events/s over the first
// and the last soakWindow of the events published. ok is false when too
// little was delivered to tell.
func soakWindows(points []soakPoint, lr loadResult, st stats, load1 float64) (first, last PhaseResult, ok bool) {
	total, published := st.unique, lr.Accepted
	if total < 20 || published < 20 || lr.start.IsZero() || st.last.IsZero() {
		return first, last, false
	}
	// From the load's start: a point there with nothing counted, the
	// server's CPU time interpolated.
	t0 := lr.start
	pts := []soakPoint{{t: t0, cpu: cpuAt(points, t0), rss: rssAt(points, t0)}}
	for _, p := range points {
		if p.t.After(t0) {
			pts = append(pts, p)
		}
	}
	dels := func(p soakPoint) int64 { return p.delivered }
	pubs := func(p soakPoint) int64 { return p.published }
	w := max(1, int64(float64(total)*soakWindow))
	pw := max(1, int64(float64(published)*soakWindow))

	window := func(name string, dFrom, dTo time.Time, nd int64, pFrom, pTo time.Time, np int64) PhaseResult {
		ph := PhaseResult{Name: name, Deliveries: nd, Expected: nd, Events: np, Load1: load1}
		if secs := dTo.Sub(dFrom).Seconds(); secs > 0 {
			ph.DeliverSeconds = secs
			ph.DeliveriesPerSec = float64(nd) / secs
		}
		if secs := pTo.Sub(pFrom).Seconds(); secs > 0 {
			ph.PublishSeconds = secs
			ph.EventsPerSec = float64(np) / secs
		}
		cpu := cpuAt(pts, dTo) - cpuAt(pts, dFrom)
		ph.CPUSeconds = cpu.Seconds()
		if nd > 0 {
			ph.CPUPer1000 = cpu.Seconds() / float64(nd) * 1000
		}
		var peak int64
		for _, p := range pts {
			if !p.t.Before(dFrom.Add(-soakSampleEvery)) && !p.t.After(dTo.Add(soakSampleEvery)) {
				peak = max(peak, p.rss)
			}
		}
		ph.PeakRSSMiB = mib(peak)
		return ph
	}
	pend := lr.end
	if pend.Before(t0) {
		pend = timeAt(pts, pubs, published)
	}
	first = window("first-10%", t0, timeAt(pts, dels, w), w, t0, timeAt(pts, pubs, pw), pw)
	last = window("last-10%", timeAt(pts, dels, total-w), st.last, w, timeAt(pts, pubs, published-pw), pend, pw)
	return first, last, first.DeliveriesPerSec > 0 && last.DeliveriesPerSec > 0
}

// timeAt returns when the count f of the samples reached c, interpolated
// linearly between the last sample below it and the first at or above it
// (the last sample's time if it never did).
func timeAt(pts []soakPoint, f func(soakPoint) int64, c int64) time.Time {
	for i, p := range pts {
		if f(p) < c {
			continue
		}
		if i == 0 {
			return p.t
		}
		q := pts[i-1]
		frac := float64(c-f(q)) / float64(f(p)-f(q))
		return q.t.Add(time.Duration(frac * float64(p.t.Sub(q.t))))
	}
	return pts[len(pts)-1].t
}

// cpuAt returns the server's CPU time at t, interpolated between the
// samples around it.
func cpuAt(pts []soakPoint, t time.Time) time.Duration {
	if len(pts) == 0 {
		return 0
	}
	for i, p := range pts {
		if p.t.Before(t) {
			continue
		}
		if i == 0 || p.t.Equal(t) {
			return p.cpu
		}
		q := pts[i-1]
		frac := float64(t.Sub(q.t)) / float64(p.t.Sub(q.t))
		return q.cpu + time.Duration(frac*float64(p.cpu-q.cpu))
	}
	return pts[len(pts)-1].cpu
}

// rssAt returns the RSS of the last sample at or before t (the first
// sample's when none is).
func rssAt(pts []soakPoint, t time.Time) int64 {
	var rss int64
	for i, p := range pts {
		if i > 0 && p.t.After(t) {
			break
		}
		rss = p.rss
	}
	return rss
}

// storeBytes returns the size on disk of the current server's store: on
// SQLite the files in its data directory (database, WAL and the rest), on
// PostgreSQL its schema's tables with their indexes. ok is false when it
// cannot be told.
func (e *env) storeBytes(ctx context.Context) (int64, bool, error) {
	if e.srv == nil {
		return 0, false, nil
	}
	if isPostgres(e.cfg.Store) {
		if e.launch.pgSchema == "" {
			return 0, false, nil
		}
		n, err := pgSchemaBytes(ctx, e.cfg.Store, e.launch.pgSchema)
		return n, err == nil, err
	}
	n, err := dirBytes(filepath.Join(e.srv.dir, "data"))
	return n, err == nil, err
}

// dirBytes sums the sizes of the regular files under dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != dir && errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile (a WAL checkpointed away)
			}
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}
