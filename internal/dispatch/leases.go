package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/herald-events/herald/internal/store"
)

// DefaultOwner names this process uniquely for leases: host name, process
// ID and four random bytes.
func DefaultOwner() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "herald"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// leaseChunk bounds the IDs renewed in one store call.
const leaseChunk = 1000

// leaseKeeper renews, every Lease/3, the lease of every delivery this engine
// holds (queued or in flight), so that no other node takes them over while
// this one is alive. It runs only on a shared store: SQLite leases never
// expire. A queued delivery whose lease could not be renewed
// because another node owns it now is dropped from memory unattempted (the
// owner attempts it); one in flight finishes, and its Record, guarded by the
// owner, changes nothing.
func (e *Engine) leaseKeeper() {
	defer close(e.keeperDone)
	for {
		t := e.cfg.Clock.NewTimer(e.cfg.Lease / 3)
		select {
		case <-e.keeperStop:
			t.Stop()
			return
		case <-t.C():
		}
		e.renewLeases()
	}
}

func (e *Engine) renewLeases() {
	e.mu.Lock()
	var ids []string
	for _, l := range e.lanes {
		for _, q := range []*deque{&l.fresh, &l.retry} {
			for i := q.head; i < len(q.buf); i++ {
				ids = append(ids, q.buf[i].c.ID)
			}
		}
	}
	for id := range e.running {
		ids = append(ids, id)
	}
	e.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	lease := e.lease(e.cfg.Clock.Now())
	asked := make(map[string]bool, len(ids))
	for _, id := range ids {
		asked[id] = true
	}
	kept := make(map[string]bool, len(ids))
	for start := 0; start < len(ids); start += leaseChunk {
		chunk := ids[start:min(start+leaseChunk, len(ids))]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err := e.cfg.Store.ExtendLeases(ctx, chunk, lease)
		cancel()
		if err != nil {
			// Keep everything: the next round tries again, and a lease that
			// does expire meanwhile is guarded by the owner check on Record.
			e.cfg.Logger.Warn("renewing leases", "deliveries", len(chunk), "err", err)
			for _, id := range chunk {
				kept[id] = true
			}
			continue
		}
		for _, id := range got {
			kept[id] = true
		}
	}
	lost := 0
	e.mu.Lock()
	for _, l := range e.lanes {
		for _, q := range []*deque{&l.fresh, &l.retry} {
			var keep []*item
			for q.len() > 0 {
				it := q.pop()
				// Only what was asked about can have been lost: deliveries
				// queued since the snapshot were not.
				if !asked[it.c.ID] || kept[it.c.ID] {
					keep = append(keep, it)
					continue
				}
				lost++
				e.forget(l, it)
			}
			for _, it := range keep {
				q.push(it)
			}
		}
	}
	e.mu.Unlock()
	if lost > 0 {
		e.cfg.Logger.Warn("deliveries taken over by another node were dropped from memory", "count", lost)
	}
}

// lease returns a lease from now for this engine.
func (e *Engine) lease(now time.Time) store.Lease {
	return store.Lease{Owner: e.cfg.Owner, Until: now.Add(e.cfg.Lease)}
}
