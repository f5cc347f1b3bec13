package scheduling

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
)

// Endpoint rate limits (endpoint.RateLimit) are a gate on a lane beside its
// circuit: a limited lane starts an attempt only with a token in hand, and
// each attempt (one request: a batch is one) uses one. Deliveries waiting
// for a token stay queued in memory, leased, or in the store (a limited
// lane holds at most what its rate sends in rateWindow: lane.window, so
// that its backlog does not fill the windows other endpoints share):
// nothing is dropped,
// attempted or counted against the circuit for it, and fresh deliveries
// still go before retries. Other lanes are not held up: a lane without a
// token leaves the ready ring like one at its concurrency limit.
//
// Tokens come from a token bucket per limited endpoint, refilled at
// PerSecond up to Burst. The rate keeper (a startstop.Loop) takes them for
// every lane that could start an attempt but for a token, all lanes in one
// call: on a store shared between processes (PostgreSQL) from the
// database's bucket row (SharedBuckets.TakeTokens: one statement, refilled
// on the database's clock), so that all nodes together keep within the
// limit; on a store of one process (SQLite) from buckets in this
// process's memory (localBuckets). A lane takes at most
// RateLimit.Lease() tokens at a time (a tenth of a second's worth, at least
// one) and at most what it can start at once, and drops them if unused
// after tokenTTL, so no node hoards tokens another could send with.
//
// When a lane is out of tokens pump kicks the keeper; a take that found the
// bucket empty says when the next token comes (Left), and the lane is not
// asked for again before then (at least minTokenWait, at most the
// PollInterval), so the keeper sleeps until the earliest of those times
// and never spins.

// Bounds of the rate keeper.
const (
	// tokenTTL is how long a lane keeps tokens it has not used.
	tokenTTL = 250 * time.Millisecond
	// minTokenWait is the shortest pause before asking an empty bucket
	// again.
	minTokenWait = 5 * time.Millisecond
)

// SharedBuckets is the store's token buckets shared by every process using
// it (internal/store/postgres/buckets.go). A store that offers it and says
// it is shared (store.Capabilities) keeps the buckets; otherwise they are
// in this process's memory.
type SharedBuckets interface {
	TakeTokens(ctx context.Context, wants []store.TokenWant) ([]store.TokenGrant, error)
}

// rateWindow is how much of its rate a limited lane holds in memory.
const rateWindow = 2 * time.Second

// window is the most deliveries the lane holds from the loader, and the
// most first attempts it queues from the fast path: endpointWindow, or
// for a rate-limited endpoint what its rate sends in rateWindow (at least
// its burst, at most endpointWindow).
func (l *lane) window(endpointWindow int) int {
	r := l.ep.RateLimit
	if r == nil {
		return endpointWindow
	}
	return min(endpointWindow, max(r.Burst, int(math.Ceil(r.PerSecond*rateWindow.Seconds()))))
}

// laneRate is a lane's tokens. Guarded by scheduler.mu.
type laneRate struct {
	tokens   int       // tokens in hand
	until    time.Time // when they are dropped unused
	askAt    time.Time // the keeper takes for the lane no sooner (zero: at once)
	waitFrom time.Time // since when the lane waits for a token (zero: it does not)
}

// hasToken reports whether the lane may start an attempt as far as its
// endpoint's rate limit goes. Caller holds scheduler.mu.
func (l *lane) hasToken(now time.Time) bool {
	return l.ep.RateLimit == nil || l.rate.tokens > 0 && now.Before(l.rate.until)
}

// needsToken reports whether the lane could start an attempt now but for
// a token. Caller holds scheduler.mu.
func (l *lane) needsToken(h health.Config, now time.Time) bool {
	return l.ep.RateLimit != nil && l.queued() > 0 && !l.hasToken(now) && l.slotFree(h, now)
}

// rateState is the scheduler's part of the rate gates. Guarded by
// scheduler.mu.
type rateState struct {
	// kick wakes the rate keeper (nil in tests of the scheduler alone). It
	// never blocks (startstop.Loop.Kick).
	kick func()
	// waited is the time lanes waited for a token, ended waits only
	// (herald_endpoint_rate_limited_seconds_total).
	waited time.Duration
}

// blocked notes a lane pump could not start: waiting for a token (the
// keeper is kicked unless it asked for the lane's recently), or not (a wait
// it was in ends).
func (rs *rateState) blocked(l *lane, h health.Config, now time.Time) {
	if !l.needsToken(h, now) {
		rs.endWait(l, now)
		return
	}
	if l.rate.waitFrom.IsZero() {
		l.rate.waitFrom = now
	}
	if !now.Before(l.rate.askAt) && rs.kick != nil {
		rs.kick()
	}
}

// took uses a token of a limited lane for the attempt pump starts.
func (rs *rateState) took(l *lane, now time.Time) {
	if l.ep.RateLimit != nil {
		l.rate.tokens--
	}
	rs.endWait(l, now)
}

// endWait adds a lane's wait for a token, if any, to waited.
func (rs *rateState) endWait(l *lane, now time.Time) {
	if !l.rate.waitFrom.IsZero() {
		rs.waited += now.Sub(l.rate.waitFrom)
		l.rate.waitFrom = time.Time{}
	}
}

// rateWant is a lane the keeper takes tokens for.
type rateWant struct {
	l     *lane
	n     int
	limit endpoint.RateLimit
}

// wants returns the lanes that need tokens now and whose bucket may
// have some: at most a lease each, and no more than they can start.
func (k *rateKeeper) wants(now time.Time) []rateWant {
	s := k.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	var ws []rateWant
	for _, l := range s.lanes {
		if !l.needsToken(s.cfg.Health, now) || now.Before(l.rate.askAt) {
			continue
		}
		n := 1
		if l.gate(s.cfg.Health, now) == health.Open {
			n = min(l.ep.RateLimit.Lease(), l.queued(), l.limit-l.inFlight)
		}
		ws = append(ws, rateWant{l, n, *l.ep.RateLimit})
	}
	return ws
}

// granted hands the tokens taken to their lanes (a lane granted none
// waits until its bucket should hold one, within [minTokenWait, maxWait])
// and returns the attempts that start and how long the keeper may sleep:
// until the earliest wait of a lane still needing tokens, maxWait at most
// (never zero: what needs a token at once kicks the keeper).
func (k *rateKeeper) granted(ws []rateWant, grants []store.TokenGrant, now time.Time, maxWait time.Duration) ([]start, time.Duration) {
	s := k.sched
	got := make(map[string]store.TokenGrant, len(grants))
	for _, g := range grants {
		got[g.EndpointID] = g
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range ws {
		l := w.l
		g, ok := got[l.id]
		if ok && g.Granted > 0 {
			l.rate = laneRate{tokens: g.Granted, until: now.Add(tokenTTL), waitFrom: l.rate.waitFrom}
			s.markReady(l)
			continue
		}
		wait := maxWait // no answer: the store failed, or has no limit (adopted soon)
		if ok {
			wait = time.Duration(math.Ceil((1 - g.Left) / w.limit.PerSecond * float64(time.Second)))
		}
		l.rate.askAt = now.Add(min(max(wait, minTokenWait), maxWait))
	}
	starts := s.pump(now, nil)
	sleep := maxWait
	for _, l := range s.lanes {
		// A lane that needs a token and may ask now was in ws (or is
		// kicked in by pump); one that cannot start for another reason (its
		// concurrency limit) is kicked in when an attempt ends.
		if l.rate.askAt.After(now) && l.needsToken(s.cfg.Health, now) {
			sleep = min(sleep, l.rate.askAt.Sub(now))
		}
	}
	return starts, sleep
}

// rateKeeper is the loop that takes tokens for the lanes.
type rateKeeper struct {
	loop   *startstop.Loop
	sched  *scheduler
	cfg    *Config
	run    *runner
	shared SharedBuckets // nil: local
	local  *localBuckets
	log    *slog.Logger
}

func newRateKeeper(s *scheduler, cfg *Config, run *runner, log *slog.Logger) *rateKeeper {
	k := &rateKeeper{sched: s, cfg: cfg, run: run, log: log, local: newLocalBuckets()}
	if sb, ok := cfg.Store.(SharedBuckets); ok && cfg.Store.Capabilities().Shared {
		k.shared = sb
	}
	k.loop = startstop.NewLoop("rate keeper", cfg.Clock, k.round)
	s.rates.kick = k.loop.Kick
	return k
}

// round takes tokens for every lane that needs them, starts what they let
// through, and sleeps until a lane may ask again (PollInterval at most).
func (k *rateKeeper) round(context.Context) time.Duration {
	now := k.cfg.Clock.Now()
	ws := k.wants(now)
	var grants []store.TokenGrant
	if len(ws) > 0 {
		var err error
		if grants, err = k.take(ws, now); err != nil && !errors.Is(err, store.ErrClosed) {
			k.log.Warn("taking rate limit tokens", "endpoints", len(ws), "err", err)
		}
	}
	starts, sleep := k.granted(ws, grants, now, k.cfg.PollInterval)
	k.run.launch(starts)
	return sleep
}

// take takes the tokens of ws from the shared buckets, or the local ones.
func (k *rateKeeper) take(ws []rateWant, now time.Time) ([]store.TokenGrant, error) {
	if k.shared == nil {
		return k.local.take(ws, now), nil
	}
	wants := make([]store.TokenWant, len(ws))
	for i, w := range ws {
		wants[i] = store.TokenWant{EndpointID: w.l.id, Want: w.n}
	}
	ctx, cancel := k.cfg.storeCtx()
	defer cancel()
	return k.shared.TakeTokens(ctx, wants)
}

// localBuckets are the token buckets of a process that sends alone (a
// store of one process). Used by the keeper's goroutine only. A bucket
// that has refilled to its burst is dropped (a new one starts full), so
// there are at most as many as limited endpoints with work since.
type localBuckets struct {
	m map[string]*localBucket
}

type localBucket struct {
	tokens float64
	at     time.Time
	limit  endpoint.RateLimit
}

func newLocalBuckets() *localBuckets { return &localBuckets{m: map[string]*localBucket{}} }

// refill brings b to now at its limit, capped at the burst.
func (b *localBucket) refill(now time.Time) {
	if el := now.Sub(b.at); el > 0 {
		b.tokens = min(float64(b.limit.Burst), b.tokens+b.limit.PerSecond*el.Seconds())
		b.at = now
	}
}

// take takes up to each want's n tokens at the lane's current limit.
func (lb *localBuckets) take(ws []rateWant, now time.Time) []store.TokenGrant {
	for id, b := range lb.m {
		if b.refill(now); b.tokens >= float64(b.limit.Burst) {
			delete(lb.m, id)
		}
	}
	out := make([]store.TokenGrant, 0, len(ws))
	for _, w := range ws {
		b := lb.m[w.l.id]
		if b == nil {
			b = &localBucket{tokens: float64(w.limit.Burst), at: now}
			lb.m[w.l.id] = b
		}
		b.limit = w.limit
		b.tokens = min(b.tokens, float64(w.limit.Burst))
		n := min(w.n, int(b.tokens))
		b.tokens -= float64(n)
		out = append(out, store.TokenGrant{EndpointID: w.l.id, Granted: n, Left: b.tokens})
	}
	return out
}

// setRateLimit is Service.SetRateLimit.
func (hs *healthSync) setRateLimit(ctx context.Context, id string, rl *endpoint.RateLimit) (endpoint.Endpoint, error) {
	ep, _, err := hs.modifyOne(ctx, id, func(ep *endpoint.Endpoint) health.Transition {
		ep.RateLimit = nil
		if rl != nil {
			r := *rl
			ep.RateLimit = &r
		}
		ep.UpdatedAt = hs.nextVersion(ep.UpdatedAt)
		return health.Transition{}
	})
	if err != nil {
		return endpoint.Endpoint{}, err
	}
	hs.adoptAll([]endpoint.Endpoint{ep})
	return ep, nil
}
