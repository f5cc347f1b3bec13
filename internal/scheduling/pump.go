package scheduling

import (
	"time"

	"github.com/herald-events/herald/internal/health"
)

// start is an attempt to run: the lane it belongs to and the
// delivery, with the others of its subscription sent in the same request
// (a batch; none without batching).
type start struct {
	l     *lane
	it    *item
	batch []*item
}

// items returns every delivery of the start, the first one first.
func (st start) items() []*item { return append([]*item{st.it}, st.batch...) }

// pump takes the attempts to start now, while there is a ready lane and a
// free global slot: one per lane per turn, round-robin, fresh before retry;
// a rate-limited lane only with a token (rate.go), which the attempt uses.
// A lane that cannot start now leaves the ring; it is put back when one of
// its attempts ends or the loader sees its probe come due. Caller holds
// s.mu; the caller runs the returned attempts after unlocking.
func (s *scheduler) pump(now time.Time, out []start) []start {
	for !s.stopping && s.inFlight < s.cfg.MaxInFlight && s.ready.len() > 0 {
		l := s.ready.pop()
		l.inReady = false
		if l.queued() == 0 || !l.canStart(s.cfg.Health, now) {
			s.rates.blocked(l, s.cfg.Health, now)
			continue
		}
		s.rates.took(l, now)
		probe := l.gate(s.cfg.Health, now) == health.ProbeNow
		var it *item
		if l.fresh.len() > 0 {
			it = l.fresh.pop()
		} else {
			it = l.retry.pop()
		}
		it.probe = probe
		s.running[&it.c] = it
		var batch []*item
		if !probe {
			batch = l.batchFor(it, s.cfg.Batch)
		}
		for _, b := range batch {
			s.running[&b.c] = b
		}
		l.inFlight++
		s.inFlight++
		s.attempts.Add(1)
		if l.canStart(s.cfg.Health, now) {
			s.markReady(l)
		} else {
			s.rates.blocked(l, s.cfg.Health, now) // out of tokens: ask for more
		}
		out = append(out, start{l, it, batch})
	}
	return out
}

// batchFor takes from the lane's queues (fresh first, then retries, each in
// order) the deliveries of first's subscription that go in one request
// with it: what is queued now, never waiting for more; at most maxEvents
// in all; and, counting the events' bytes, no more than preferredBytes,
// except that an event larger than that goes alone. A probe goes alone
// (the caller does not batch it). limits is schedConfig.Batch. Caller holds
// scheduler.mu.
func (l *lane) batchFor(first *item, limits func(subscriptionID string) (int, int)) []*item {
	if limits == nil {
		return nil
	}
	maxEvents, preferred := limits(first.c.SubscriptionID)
	size := len(first.c.Payload)
	if maxEvents <= 1 || size >= preferred || first.c.DeadLetterOf != "" {
		return nil // a dead letter goes alone, in its own format
	}
	var batch []*item
	for _, q := range []*deque{&l.fresh, &l.retry} {
		q.take(func(it *item) bool {
			if len(batch)+1 >= maxEvents || it.c.SubscriptionID != first.c.SubscriptionID || it.c.DeadLetterOf != "" ||
				size+len(it.c.Payload) > preferred {
				return false
			}
			size += len(it.c.Payload)
			batch = append(batch, it)
			return true
		})
	}
	return batch
}
