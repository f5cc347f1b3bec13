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
// expire): it renews the lease of every delivery this node holds (queued or in flight), so that no other node takes them over while
// this one is alive, and returns the pause before the next round, Lease/3.
// A queued delivery whose lease could not be renewed because another node
// owns it now is dropped from memory unattempted (the owner attempts it);
// one in flight finishes, and its Record, guarded by the owner, changes
// nothing.
func (k *leaseKeeper) round(context.Context) time.Duration {
	next := k.cfg.Lease / 3
	ids := k.heldIDs()
	if len(ids) == 0 {
		return next
	}
	lease := k.cfg.lease(k.cfg.Clock.Now())
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
			// Keep everything: the next round tries again, and a lease that
			// does expire meanwhile is guarded by the owner check on Record.
			k.log.Warn("renewing leases", "deliveries", len(chunk), "err", err)
			for _, id := range chunk {
				kept[id] = true
			}
			continue
		}
		for _, id := range got {
			kept[id] = true
		}
	}
	if lost := k.dropLost(asked, kept); lost > 0 {
		k.log.Warn("deliveries taken over by another node were dropped from memory", "count", lost)
	}
	return next
}

// heldIDs returns the IDs of every delivery held (queued or in flight), for
// lease renewal.
func (k *leaseKeeper) heldIDs() []string {
	s := k.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, l := range s.lanes {
		for _, q := range []*deque{&l.fresh, &l.retry} {
			for i := q.head; i < len(q.buf); i++ {
				ids = append(ids, q.buf[i].c.ID)
			}
		}
	}
	for c := range s.running {
		ids = append(ids, c.ID)
	}
	return ids
}

// dropLost removes from the queues the deliveries that were asked about
// (asked) and are no longer this node's (not in kept), returning how many.
// Deliveries queued since the question are kept.
func (k *leaseKeeper) dropLost(asked, kept map[string]bool) int {
	s := k.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	lost := 0
	for _, l := range s.lanes {
		for _, q := range []*deque{&l.fresh, &l.retry} {
			var keep []*item
			for q.len() > 0 {
				it := q.pop()
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
