package scheduling

import (
	"context"
	"log/slog"
	"time"

	"github.com/herald-events/herald/internal/startstop"
)

// leaseKeeper renews the leases of what this node holds, on stores whose
// leases expire.
type leaseKeeper struct {
	loop  *startstop.Loop
	sched *scheduler
	cfg   *Config
	log   *slog.Logger
}

func newLeaseKeeper(s *scheduler, cfg *Config, log *slog.Logger) *leaseKeeper {
	k := &leaseKeeper{sched: s, cfg: cfg, log: log}
	k.loop = startstop.NewLoop("lease keeper", cfg.Clock, k.round)
	return k
}

// leaseChunk bounds the IDs renewed in one store call.
const leaseChunk = 1000

// round is the lease keeper's round (run only on stores whose leases
// expire), every Lease/3: it renews the leases this node holds (queued or
// in flight) that end within two thirds of Lease (renewBy), so that no
// other node takes them over while this one is alive, and returns the
// pause before the next round. A lease is so renewed when it still has at
// least a third of Lease left (the next round comes before it would have
// less), and a delivery attempted within a third of Lease of its claim or
// publish is never renewed: under a backlog that spilled to the store,
// renewing every held lease each round wrote as many rows as the
// deliveries themselves (docs/benchmarks.md, "Issue 36: the lease
// renewal").
//
// A queued delivery whose lease could not be renewed because another node
// owns it now is dropped from memory unattempted (the owner attempts it);
// one in flight finishes, and its Record, guarded by the owner, changes
// nothing.
func (k *leaseKeeper) round(context.Context) time.Duration {
	next := k.cfg.Lease / 3
	now := k.cfg.Clock.Now()
	ids := k.heldIDs(renewBy(now, k.cfg.Lease))
	if len(ids) == 0 {
		return next
	}
	lease := k.cfg.lease(now)
	asked := make(map[string]bool, len(ids))
	for _, id := range ids {
		asked[id] = true
	}
	kept := make(map[string]bool, len(ids))
	for start := 0; start < len(ids); start += leaseChunk {
		chunk := ids[start:min(start+leaseChunk, len(ids))]
		ctx, cancel := k.cfg.storeCtx()
		got, err := k.cfg.Store.ExtendLeases(ctx, chunk, lease)
		cancel()
		if err != nil {
			// Keep everything, as it was: the next round tries again, and a
			// lease that does expire meanwhile is guarded by the owner check
			// on Record.
			k.log.Warn("renewing leases", "deliveries", len(chunk), "err", err)
			for _, id := range chunk {
				delete(asked, id)
			}
			continue
		}
		for _, id := range got {
			kept[id] = true
		}
	}
	if lost := k.settle(asked, kept, lease.Until); lost > 0 {
		k.log.Warn("deliveries taken over by another node were dropped from memory", "count", lost)
	}
	return next
}

// renewBy is the time before which a lease is renewed by a round at now:
// the next round, a third of lease away, leaves it at least another third.
func renewBy(now time.Time, lease time.Duration) time.Time {
	return now.Add(2 * lease / 3)
}

// heldIDs returns the IDs of every delivery held (queued or in flight)
// whose lease ends before by, for lease renewal.
func (k *leaseKeeper) heldIDs(by time.Time) []string {
	s := k.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	add := func(it *item) {
		if it.leaseUntil.Before(by) {
			ids = append(ids, it.c.ID)
		}
	}
	for _, l := range s.lanes {
		for _, q := range []*deque{&l.fresh, &l.retry} {
			for i := q.head; i < len(q.buf); i++ {
				add(q.buf[i])
			}
		}
	}
	for _, it := range s.running {
		add(it)
	}
	return ids
}

// settle takes in a round's answer: the deliveries asked about (asked)
// that are still this node's (kept) now hold their lease until `until`;
// the queued ones that are not are removed from the queues, and settle
// returns how many. Deliveries queued since the question, and those of a
// chunk whose call failed (round takes them out of asked), keep what they
// had.
func (k *leaseKeeper) settle(asked, kept map[string]bool, until time.Time) int {
	s := k.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range s.running {
		if kept[it.c.ID] {
			it.leaseUntil = until
		}
	}
	lost := 0
	for _, l := range s.lanes {
		for _, q := range []*deque{&l.fresh, &l.retry} {
			var keep []*item
			for q.len() > 0 {
				it := q.pop()
				if kept[it.c.ID] {
					it.leaseUntil = until
				}
				if !asked[it.c.ID] || kept[it.c.ID] {
					keep = append(keep, it)
					continue
				}
				lost++
				s.forget(l, it)
			}
			for _, it := range keep {
				q.push(it)
			}
		}
	}
	return lost
}
