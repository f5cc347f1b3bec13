package scheduling

import (
	"context"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/recording"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
)

// Finisher ends each recorded delivery's time in memory: it reads the
// recording stage's Results (the one way back into this stage) and, for
// each, frees the delivery's place in its lane, tells the loader when a
// retry is due (and, due now, of a dead-letter copy and of the next
// delivery of an ordering key whose delivery ended), and gives back to
// the store a delivery whose outcome was given up at stop, to be
// attempted again.
//
// Its lifecycle is startstop's with one difference: it ends when Results is
// closed (the recorder ended), not on its context, so that no result is
// lost; start it before the recorder and stop it after.
type Finisher struct {
	startstop.Base
	sched   *scheduler
	results Results
	rel     *releaser
	loader  *startstop.Loop
	clock   clock.Clock
}

// Start runs the finisher on a goroutine of its own.
func (f *Finisher) Start(ctx context.Context) error {
	f.StartGo(ctx, func(context.Context) {
		for batch := range f.results.Results() {
			f.finish(batch)
		}
	})
	return nil
}

// finish applies one batch of results.
func (f *Finisher) finish(batch []recording.Result) {
	var failed []string
	for _, res := range batch {
		if res.Err != nil {
			failed = append(failed, res.Delivery.ID)
		}
	}
	f.rel.release(failed)
	wake := false
	now := f.clock.Now()
	for _, res := range batch {
		if f.finishedClaim(res.Delivery, res.Next, now) {
			wake = true
		}
		if res.DeadLetterEndpoint != "" && f.sched.hint(res.DeadLetterEndpoint, now) {
			wake = true // the dead letter is due now on its own endpoint
		}
		if ended := res.Delivery.OrderingKey != "" && res.Next.IsZero(); ended && f.sched.hint(res.Delivery.EndpointID, now) {
			wake = true // the key's next delivery is its head now (docs/ordering.md)
		}
	}
	if wake {
		f.loader.Kick()
	}
}

// finishedClaim is finished for a delivery in its attempt, known by its
// Claimed (an unknown one does nothing).
func (f *Finisher) finishedClaim(c *store.Claimed, next, now time.Time) bool {
	s := f.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.running[c]
	if it == nil {
		return false
	}
	return s.finishLocked(s.lanes[it.c.EndpointID], it, next, now)
}

// finished ends a delivery's time in memory after its outcome was recorded
// (or it was given back). next is the retry time of a delivery left pending
// (zero: none). It reports whether the loader should look now.
func (s *scheduler) finished(l *lane, it *item, next time.Time, now time.Time) (wake bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finishLocked(l, it, next, now)
}

// finishLocked is finished; caller holds s.mu.
func (s *scheduler) finishLocked(l *lane, it *item, next time.Time, now time.Time) (wake bool) {
	if !next.IsZero() {
		l.nextDue = earlier(l.nextDue, next)
		l.hinted = earlier(l.hinted, next)
		wake = true
	}
	if s.forget(l, it) {
		wake = true
	}
	delete(s.running, &it.c)
	// The loader claims a closed circuit's probes one at a time: let it
	// look for the next as soon as this one is done.
	if l.gate(s.cfg.Health, now) != health.Open {
		wake = true
	}
	if l.idle() {
		l.idleSince = now // idle from its last finish, however busy before
	}
	return wake
}
