package dispatch

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"
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

// renewLeases is the lease keeper's round (a loop job, run only on stores
// whose leases expire): it renews the lease of every delivery this engine
// holds (queued or in flight), so that no other node takes them over while
// this one is alive, and returns the pause before the next round, Lease/3.
// A queued delivery whose lease could not be renewed because another node
// owns it now is dropped from memory unattempted (the owner attempts it);
// one in flight finishes, and its Record, guarded by the owner, changes
// nothing.
func (e *Engine) renewLeases() time.Duration {
	next := e.cfg.Lease / 3
	ids := e.sched.heldIDs()
	if len(ids) == 0 {
		return next
	}
	lease := e.lease(e.cfg.Clock.Now())
	asked := make(map[string]bool, len(ids))
	for _, id := range ids {
		asked[id] = true
	}
	kept := make(map[string]bool, len(ids))
	for start := 0; start < len(ids); start += leaseChunk {
		chunk := ids[start:min(start+leaseChunk, len(ids))]
		ctx, cancel := e.storeCtx()
		got, err := e.cfg.Store.ExtendLeases(ctx, chunk, lease)
		cancel()
		if err != nil {
			// Keep everything: the next round tries again, and a lease that
			// does expire meanwhile is guarded by the owner check on Record.
			e.log.Warn("renewing leases", "deliveries", len(chunk), "err", err)
			for _, id := range chunk {
				kept[id] = true
			}
			continue
		}
		for _, id := range got {
			kept[id] = true
		}
	}
	if lost := e.sched.dropLost(asked, kept); lost > 0 {
		e.log.Warn("deliveries taken over by another node were dropped from memory", "count", lost)
	}
	return next
}
